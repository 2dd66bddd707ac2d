// Package formats registers every model format edgeload has built in, for
// package loader: a program that imports it for its side effect,
//
//	import _ "github.com/edgeload/edgeload/formats"
//
// opens every one of them with loader.Open. Its imports are the one list of
// the built-in formats; format.Registered lists them, with what each reads,
// at run time, and `edgeload help` prints them.
package formats

import (
	_ "github.com/edgeload/edgeload/loader/bundle"      // bpte: ExecuTorch bundled programs
	_ "github.com/edgeload/edgeload/loader/gguf"        // gguf: llama.cpp models
	_ "github.com/edgeload/edgeload/loader/litertlm"    // litertlm: LiteRT-LM containers
	_ "github.com/edgeload/edgeload/loader/npy"         // npy: NumPy arrays
	_ "github.com/edgeload/edgeload/loader/ptd"         // ptd: ExecuTorch named data
	_ "github.com/edgeload/edgeload/loader/pte"         // pte: ExecuTorch programs
	_ "github.com/edgeload/edgeload/loader/ptn"         // ptn: ExecuTorch packages
	_ "github.com/edgeload/edgeload/loader/rten"        // rten: RTen models
	_ "github.com/edgeload/edgeload/loader/safetensors" // safetensors: Hugging Face weights
	_ "github.com/edgeload/edgeload/loader/tflite"      // tflite: TFLite models
)
