package repack_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/repack"
)

// Compare reports each kind of difference, once, with both sides' values,
// in name order; equal lists give none.
func TestCompareKinds(t *testing.T) {
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	base := []repack.TensorSum{
		{Name: "a", DType: "float32", Shape: []int64{2, 3}, SHA256: sum("a")},
		{Name: "b", DType: "int8", Shape: []int64{4}, SHA256: sum("b")},
		{Name: "c", DType: "float16", Shape: []int64{8}, SHA256: sum("c")},
	}
	with := func(i int, f func(*repack.TensorSum)) []repack.TensorSum {
		s := slices.Clone(base)
		s[i].Shape = slices.Clone(s[i].Shape)
		f(&s[i])
		return s
	}
	for _, c := range []struct {
		name string
		b    []repack.TensorSum
		want []repack.Difference
	}{
		{"same", slices.Clone(base), nil},
		{"same, other order", []repack.TensorSum{base[2], base[0], base[1]}, nil},
		{"dtype", with(1, func(s *repack.TensorSum) { s.DType = "uint8" }),
			[]repack.Difference{{Name: "b", What: "dtype", A: "int8", B: "uint8"}}},
		{"shape", with(0, func(s *repack.TensorSum) { s.Shape = []int64{3, 2} }),
			[]repack.Difference{{Name: "a", What: "shape", A: "[2 3]", B: "[3 2]"}}},
		{"rank", with(0, func(s *repack.TensorSum) { s.Shape = []int64{6} }),
			[]repack.Difference{{Name: "a", What: "shape", A: "[2 3]", B: "[6]"}}},
		{"bytes", with(2, func(s *repack.TensorSum) { s.SHA256 = sum("c'") }),
			[]repack.Difference{{Name: "c", What: "sha256", A: sum("c"), B: sum("c'")}}},
		{"unresolved", with(2, func(s *repack.TensorSum) { s.SHA256 = "" }),
			[]repack.Difference{{Name: "c", What: "unresolved"}}},
		{"renamed", with(1, func(s *repack.TensorSum) { s.Name = "b2" }),
			[]repack.Difference{{Name: "b", What: "only in A"}, {Name: "b2", What: "only in B"}}},
		{"count", append(slices.Clone(base), base[1]),
			[]repack.Difference{{Name: "b", What: "count", A: "1", B: "2"}}},
		{"dtype and bytes", with(0, func(s *repack.TensorSum) { s.DType, s.SHA256 = "int32", sum("x") }),
			[]repack.Difference{{Name: "a", What: "dtype", A: "float32", B: "int32"}, {Name: "a", What: "sha256", A: sum("a"), B: sum("x")}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := repack.Compare(base, c.b)
			if !slices.EqualFunc(got, c.want, func(x, y repack.Difference) bool { return x == y }) {
				t.Fatalf("Compare = %v, want %v", got, c.want)
			}
			// Compare is symmetric up to the sides.
			back := repack.Compare(c.b, base)
			if len(back) != len(c.want) {
				t.Fatalf("Compare(b, a) = %v, want %d differences", back, len(c.want))
			}
		})
	}
	d := repack.Difference{Name: "w", What: "sha256", A: "00", B: "ff"}
	if got := d.String(); got != "w: sha256 00 != ff" {
		t.Errorf("String() = %q", got)
	}
	if got := (repack.Difference{Name: "w", What: "only in A"}).String(); got != "w: only in A" {
		t.Errorf("String() = %q", got)
	}
}

// Check sees one flipped byte of one weight: a single sha256 difference
// naming that tensor, with the SHA-256 of its bytes before and after as
// computed here from the writer's inputs.
func TestCheckFlippedByte(t *testing.T) {
	a, flipped, name, before, after := flippedPair(t, t.TempDir())
	diffs, err := repack.Check(a, a)
	if err != nil || len(diffs) != 0 {
		t.Fatalf("a file against itself: %v, %v", diffs, err)
	}
	diffs, err = repack.Check(a, flipped)
	if err != nil {
		t.Fatal(err)
	}
	want := repack.Difference{Name: name, What: "sha256", A: before, B: after}
	if len(diffs) != 1 || diffs[0] != want {
		t.Fatalf("Check = %v, want [%v]", diffs, want)
	}
}

// flippedPair writes a program of three named float32 weights into dir and
// a copy with one byte of the second weight flipped; it returns both
// paths, that weight's name and the SHA-256 of its bytes in each.
func flippedPair(t *testing.T, dir string) (a, b, name, before, after string) {
	t.Helper()
	data := [][]byte{make([]byte, 24), make([]byte, 40), make([]byte, 12)}
	names := []string{"w.first", "w.second", "w.third"}
	ts := make([]writer.PTETensor, len(data))
	for i, d := range data {
		for k := range d {
			d[k] = byte(i*59 + k*13 + 1)
		}
		ts[i] = writer.PTETensor{ScalarType: writer.PTEFloat32, Sizes: []int32{int32(len(d) / 4)}, Data: d, Name: names[i]}
	}
	a = filepath.Join(dir, "a.pte")
	info, err := (&writer.PTE{Methods: []writer.PTEMethod{{Name: "forward", Tensors: ts}}}).WriteFile(a)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	at := info.Tensors[0][1]
	if at.Offset < 0 || at.Size != int64(len(data[1])) {
		t.Fatalf("the writer placed tensor 1 at %+v", at)
	}
	raw[at.Offset+5] ^= 0x40
	b = filepath.Join(dir, "b.pte")
	if err := os.WriteFile(b, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(data[1])
	before = hex.EncodeToString(h[:])
	data[1][5] ^= 0x40
	h = sha256.Sum256(data[1])
	after = hex.EncodeToString(h[:])
	return a, b, names[1], before, after
}
