// Package repack rewrites a model file (.pte, .ptd, .rten V2) with a new
// layout and the same meaning: segments, and optionally every constant, moved
// to page boundaries, or a program's constants moved out to a .ptd file
// (Options.Externalize).
//
// The input is opened and fully verified with package loader before anything
// is written; the FlatBuffer metadata is unpacked from the verified buffer,
// changed and packed again, and the weights are copied through the mapping in
// chunks, never held in memory whole. The output is written to a temporary
// file beside it, synced and renamed into place, so a failed repack leaves
// nothing behind. Check compares two files' tensors by name and SHA-256.
package repack
