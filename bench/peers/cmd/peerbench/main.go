// Command peerbench compares edgeload's GGUF and safetensors readers with
// other loaders of the same files, interleaved in one run: Open plus the
// first lookup of a tensor by name, on model-shaped files.
//
// Usage:
//
//	peerbench gen DIR
//	peerbench run [-dir DIR] [-rounds R] [-cycles P] [-warmup W] [-block-ms MS]
//	              [-rust PATH] [-llama PATH] [-case NAME,...] [-out DIR]
//	peerbench serve -peer NAME FILE TENSOR
//	peerbench stat -peer NAME FILE TENSOR
//
// gen writes the files (sparse past their headers: no load reads a
// weight): model-300.gguf (300 tensors, a 150,000-token vocabulary,
// 1.2 GB), model-300.safetensors (291 tensors, 1.2 GB) and
// lora-10000.safetensors (10,000 tensors, 1.3 GB).
//
// run measures every case. Each round starts every peer of the case as a
// fresh process (serve below, or the Rust and C harnesses' serve mode),
// then asks each in turn for a block of loads (about block-ms long, sized
// in the round's warm-up blocks), W+P times, rotating which peer goes
// first; the W warm-up cycles are discarded. Then each peer runs once more
// in a fresh process in stat mode, for its resident memory and allocations.
// run prints one markdown table per case and, with -out, writes the raw
// times and every JSON line there.
//
// serve runs loads on demand: for each line N on stdin, N loads, one line
// of their times in nanoseconds. stat prints one JSON line: the process's
// Rss (/proc/self/smaps_rollup) before and after the first open + lookup
// (kept open), the file's resident pages in the process (smaps), the heap
// allocations (runtime.MemStats) of one open + lookup + close and of one
// lookup on an open file.
//
// A load is open + look one tensor up by name + close, as each library is
// used idiomatically: for edgeload mmapfile.Open + gguf.NewFile or
// safetensors.NewFile (edgeload-gguf, edgeload-st) or loader.Open
// (edgeload-loader); for gguf-parser-go ParseGGUFFile (through an
// *os.File, or its UseMMap option) and TensorInfos.Get; for
// nlpodyssey/safetensors a mapping, Deserialize and Tensor. The -parse
// peers (and llama.cpp-buffer) map the file once per process and time only
// the parse and lookup.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "gen":
		if len(os.Args) != 3 {
			usage()
		}
		var fs []genFile
		if fs, err = generate(os.Args[2]); err == nil {
			for _, f := range fs {
				fmt.Println(f.Case, f.Path, f.Tensor)
			}
		}
	case "run":
		err = runCmd(os.Args[2:])
	case "serve", "stat":
		err = peerCmd(os.Args[1], os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peerbench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage: peerbench gen DIR
       peerbench run [-dir DIR] [-rounds R] [-cycles P] [-warmup W] [-block-ms MS] [-rust PATH] [-llama PATH] [-case NAME,...] [-out DIR]
       peerbench serve|stat -peer NAME FILE TENSOR`)
	os.Exit(2)
}
