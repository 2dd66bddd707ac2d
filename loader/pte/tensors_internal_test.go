package pte

import (
	"testing"
	"unsafe"
)

// A record is 24 bytes: the 1024 records of a program of 1024 tensors
// (24 KiB) are then a small allocation for the runtime (up to 32 KiB less
// its header), not a large one with a span of its own, which costs Open
// several microseconds more (BenchmarkParse).
func TestTensorRecSize(t *testing.T) {
	if got := unsafe.Sizeof(tensorRec{}); got != 24 {
		t.Fatalf("tensorRec is %d bytes, want 24", got)
	}
}
