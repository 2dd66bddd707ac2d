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

// TestNameHashWords checks that nameHash reads every byte of a name: names
// that differ in one byte anywhere (in a middle word, in the last partial
// one) and share their length and ends hash apart.
func TestNameHashWords(t *testing.T) {
	base := []byte("get_kv_output_0_quant_attr_x")
	seen := map[uint64]int{}
	for k := range base {
		name := append([]byte(nil), base...)
		name[k] ^= 1
		if j, dup := seen[nameHash(name)]; dup {
			t.Fatalf("names changed at byte %d and byte %d hash alike", j, k)
		}
		seen[nameHash(name)] = k
	}
}
