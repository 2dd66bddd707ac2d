// Package repack rewrites a model file with a new layout and the same
// meaning: segments, and optionally every constant, moved to page
// boundaries (for every built-in format a layout can change, and any
// format whose Model is a format.Relayouter), a program's constants moved
// out to a .ptd file (Options.Externalize), or an RTen V1 model written as
// V2 (Options.RTenV2); or converts a model's tensors to a safetensors or
// .ptd file (Options.To).
//
// The input is opened with package loader, which verifies its headers,
// FlatBuffer and ranges, and every check of loader.Verify but the read of
// every byte is made before anything is written (Options.VerifyBytes adds
// the read, beside the copy); the FlatBuffer metadata is rebuilt from the
// verified buffer, and the weights are copied segment by segment
// (copy_file_range on Linux, the mapping in 1 MiB chunks elsewhere), never
// held in memory whole. Outputs are written to temporary files beside them,
// checked (and synced, with Options.Sync) and renamed into place only when
// all of that succeeded.
// Check compares two files' tensors by name and SHA-256.
package repack
