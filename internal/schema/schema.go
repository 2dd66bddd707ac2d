// Package schema holds edgeload's own FlatBuffers schemas for the three
// formats, written from the wire facts in shared/spec/FORMATS.md. The Go
// code generated from them (with Debian's flatc 2.0.8) is committed in the
// subpackages ptefb, ptdfb, rtenfb, bpfb (bundled programs) and tflitefb
// (TFLite models), so a build needs no flatc.
//
// The generated accessors have no bounds checks of their own: the loaders
// read them only after loader/internal/fbverify has verified the buffer.
package schema

//go:generate flatc --go --gen-object-api -o . program.fbs
//go:generate flatc --go --gen-object-api -o . flat_tensor.fbs
//go:generate flatc --go --gen-object-api -o . rten.fbs
//go:generate flatc --go -o . bundled_program.fbs
//go:generate flatc --go -o . tflite.fbs
//go:generate gofmt -w ptefb ptdfb rtenfb bpfb tflitefb
