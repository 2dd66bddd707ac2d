package stream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"path/filepath"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader"
)

// TestReal streams every real model with a small budget (so that the larger
// tensors come in windows) and checks each tensor's SHA-256, its windows
// joined, against the expected values; unlinked external tensors are left
// out, and every other tensor is streamed once.
func TestReal(t *testing.T) {
	for _, path := range testmodels.All(t) {
		exp := testmodels.Load(t, path)
		if exp.ExitCode != 0 {
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			m, err := loader.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			s, err := New(context.Background(), m, WithBudget(64<<10), WithDropCache())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			want := 0
			for _, et := range exp.Tensors {
				if et.Offset != nil {
					want++
				}
			}
			seen := make(map[int]bool)
			var h hash.Hash
			for {
				it, err := s.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if st := s.Stats(); st.Resident > st.Budget {
					t.Fatalf("%s: %d bytes held, budget %d", it.Name, st.Resident, st.Budget)
				}
				if it.Tensor < 0 {
					continue
				}
				if it.Part == 0 {
					h = sha256.New()
				}
				if err := it.Data.Checksum(h); err != nil {
					t.Fatal(err)
				}
				if it.Part < it.Parts-1 {
					continue
				}
				et := exp.Tensors[it.Tensor]
				if et.Name != it.Name || et.Offset == nil {
					t.Fatalf("tensor %d: streamed %q, expected %q (offset %v)", it.Tensor, it.Name, et.Name, et.Offset)
				}
				if got := hex.EncodeToString(h.Sum(nil)); got != et.SHA256 {
					t.Fatalf("%s: sha256 %s, want %s", it.Name, got, et.SHA256)
				}
				if seen[it.Tensor] {
					t.Fatalf("%s streamed twice", it.Name)
				}
				seen[it.Tensor] = true
			}
			if len(seen) != want {
				t.Fatalf("streamed %d tensors, want %d", len(seen), want)
			}
		})
	}
}
