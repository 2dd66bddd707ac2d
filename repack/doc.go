// Package repack rewrites a model file of any format package loader reads
// with a new layout and the same meaning: segments, and optionally every
// tensor that shares a segment, moved to page boundaries
// (Options.Align, Options.TensorAlign), a model's constants moved out to a
// data file (Options.Externalize: a program's to a .ptd), a format's older
// version written as its newest (Options.Upgrade: an RTen V1 model as V2),
// or its tensors converted to another format (Options.To).
//
// It names no format: the format package lays its file out anew
// (format.Relayouter), or the target format lays out the tensors
// (format.Registration.Convert), and repack writes the layout. The input
// is opened with package loader, which verifies its headers, metadata and
// ranges, and every check of loader.Verify but the read of every byte is
// made before anything is written; the weights are copied segment by
// segment (copy_file_range on Linux, the mapping in 1 MiB chunks
// elsewhere), never held in memory whole. Outputs are written to
// temporary files beside them, read back and compared with the input
// (Diff), synced with Options.Sync, and renamed into place only when all
// of that succeeded.
//
// Check compares two files: their tensors by name, dtype, shape and
// SHA-256, their delegate blobs, named data and segments without tensors
// by name, size and SHA-256.
package repack
