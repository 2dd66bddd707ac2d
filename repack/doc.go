// Package repack rewrites a model file (.pte, .ptd, .rten V2) with a new
// layout and the same meaning: segments, and optionally every constant, moved
// to page boundaries, or a program's constants moved out to a .ptd file
// (Options.Externalize).
//
// The input is opened with package loader, which verifies its headers,
// FlatBuffer and ranges, before anything is written, and loader.Verify reads
// every byte of it beside the copy; the FlatBuffer metadata is unpacked from
// the verified buffer, changed and packed again, and the weights are copied
// segment by segment (copy_file_range on Linux, the mapping in 1 MiB chunks
// elsewhere), never held in memory whole. Outputs are written to temporary
// files beside them, checked, synced and renamed into place only when all of
// that succeeded. Check compares two files' tensors by name and SHA-256.
package repack
