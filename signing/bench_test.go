package signing

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkVerify hashes a 64 MiB model, page cache warm: one file whole,
// or in 8 MiB shards, on one and two workers. BenchmarkSHA256 is the floor:
// the same bytes hashed from memory.
func BenchmarkVerify(b *testing.B) {
	const size = 64 << 20
	data := randBytes(size, 11)
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "m.bin"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	files := map[string][]byte{"m.bin": data}
	for _, shard := range []int64{0, 8 << 20} {
		m, err := parseStatement(statement(b, files, []string{"m.bin"}, shard, nil))
		if err != nil {
			b.Fatal(err)
		}
		md, err := m.Model(dir)
		if err != nil {
			b.Fatal(err)
		}
		for _, workers := range []int{1, 2} {
			name := fmt.Sprintf("files/workers=%d", workers)
			if shard > 0 {
				name = fmt.Sprintf("shards/workers=%d", workers)
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(size)
				for b.Loop() {
					if _, err := m.VerifyModel(context.Background(), md, &Options{Workers: workers}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkSHA256(b *testing.B) {
	data := randBytes(64<<20, 11)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		sha256.Sum256(data)
	}
}

// BenchmarkSum hashes 1 GiB, more than the caches hold, as Sum does (the
// cache lines 4 KiB ahead loaded as it goes) and as a plain sha256 Write:
// what a stream pays to check bytes straight from a file's mapping.
func BenchmarkSum(b *testing.B) {
	data := make([]byte, 1<<30)
	for i := range data {
		data[i] = byte(i * 7)
	}
	b.Run("lines", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			Sum(data)
		}
	})
	b.Run("plain", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			sha256.Sum256(data)
		}
	})
}
