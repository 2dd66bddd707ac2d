// Package writer writes valid model files of the three formats edgeload
// reads (ExecuTorch .pte programs and .ptd named data, RTen .rten models),
// with a layout the caller chooses: header variants, alignments, legacy
// layouts, and knobs that break one thing on purpose for negative tests.
//
// It is edgeload's own writer, used by tests, benchmarks and `go generate`
// fixtures; it builds the FlatBuffers with the generated builders in
// internal/schema. Each format has a description type (PTE, PTD, ...) with
// Plan (the layout, without writing), Bytes (the whole file in memory, for
// small files and fuzz seeds) and WriteFile, which streams segment data to
// disk and leaves data the caller did not give (neither bytes nor a fill
// function) as sparse holes, so a multi-GiB model costs nothing on disk.
package writer
