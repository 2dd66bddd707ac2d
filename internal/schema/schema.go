// Package schema holds edgeload's own FlatBuffers schemas for the three
// formats, written from the wire facts in shared/spec/FORMATS.md. The Go
// code generated from them (with Debian's flatc 2.0.8) is committed in the
// subpackages ptefb, ptdfb, rtenfb, bpfb (bundled programs), ptnfb (the
// graph of an ExecuTorch .ptn package), tflitefb (TFLite models) and
// litertlmfb (the LiteRT-LM container's header), so a build needs no flatc.
//
// The generated accessors have no bounds checks of their own: the loaders
// read them only after the verifiers fbgen writes beside them
// (verify_gen.go, one function per table, built of internal/fbverify's
// steps) have verified the buffer.
//
// tflite_options.fbs, included by tflite.fbs, holds the TFLite tables only
// the verifier visits (the builtin options): fbgen writes their verifiers,
// flatc no accessors. tflite_upstream.py writes it from LiteRT's schema and
// checks tflite.fbs against that schema. fbtest.fbs is no format: it
// exercises fbgen's verifiers in internal/fbverify's tests.
package schema

//go:generate flatc --go --gen-object-api -o . program.fbs
//go:generate flatc --go --gen-object-api -o . flat_tensor.fbs
//go:generate flatc --go --gen-object-api -o . rten.fbs
//go:generate flatc --go -o . bundled_program.fbs
//go:generate flatc --go --gen-object-api -o . nptg.fbs
//go:generate flatc --go -o . tflite.fbs
//go:generate flatc --go -o . litertlm.fbs
//go:generate gofmt -w ptefb ptdfb rtenfb bpfb ptnfb tflitefb litertlmfb
//go:generate go run ./fbgen
