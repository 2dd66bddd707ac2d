package runtimes

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/edgeload/edgeload/formats" // every built-in format
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/repack"
)

// File is a model file as a runtime loads it: a program with the .ptd
// files it reads, or a model alone.
type File struct {
	Path string
	Data []string
}

// datum returns the one data file the driver can give a program, or "".
func (f File) datum() string {
	if len(f.Data) > 0 {
		return f.Data[0]
	}
	return ""
}

// Check compares a and b as `edgeload repack --check` does (repack.Check:
// tensors by name, dtype, shape and SHA-256; delegate blobs, named data and
// segments without tensors by name, size and SHA-256), each file with its
// own data files, and returns every difference. An error says that one of
// them does not open or verify, which is itself a difference.
func Check(a, b File) ([]repack.Difference, error) {
	sa, err := repack.SummarizeFile(a.Path, a.Data...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a.Path, err)
	}
	sb, err := repack.SummarizeFile(b.Path, b.Data...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Path, err)
	}
	return repack.Diff(sa, sb), nil
}

// CheckSays runs Check and says what it found in one line: "" when the
// files are the same, else the differences (or the error).
func CheckSays(a, b File) string {
	d, err := Check(a, b)
	if err != nil {
		return "refused: " + err.Error()
	}
	if len(d) == 0 {
		return ""
	}
	s := make([]string, len(d))
	for i, x := range d {
		s[i] = x.String()
	}
	return strings.Join(s, "; ")
}

// Breakage is a copy of a model with something broken, and where.
type Breakage struct {
	What  string   // what was broken, for the logs
	Names []string // the names repack --check gives what changed (tensors', "delegate M/I")
	File  File     // the model to run: the broken copies in place of the files they copy
}

// FlipWeight writes into dir a copy of the file of f that holds the first
// weight the model uses (a program, or the .ptd it reads) with one byte of
// it changed (flipAt). A weight is a constant of a float, 8-bit or
// sub-byte integer or block type, those of other integer types (shapes,
// indices, biases) only where there is no such one; embeddings are passed
// over (a lookup reads only the rows its tokens select). ok is false when
// f has no weight whose bytes it holds.
func FlipWeight(tb testing.TB, dir string, f File) (b Breakage, ok bool) {
	tb.Helper()
	return breakWeights(tb, dir, f, false)
}

// PerturbWeights is FlipWeight for every weight (every constant tensor
// whose bytes f holds, embeddings too) at once: a model whose outputs do not
// change with it computes them without its weights.
func PerturbWeights(tb testing.TB, dir string, f File) (b Breakage, ok bool) {
	tb.Helper()
	return breakWeights(tb, dir, f, true)
}

func breakWeights(tb testing.TB, dir string, f File, all bool) (Breakage, bool) {
	tb.Helper()
	m, err := loader.Open(f.Path, loader.WithData(f.Data...))
	if err != nil {
		tb.Fatalf("%s: %v", f.Path, err)
	}
	defer m.Close()
	order, err := m.UseOrder("")
	if err != nil {
		tb.Fatalf("%s: use order: %v", f.Path, err)
	}
	eligible := func(t *format.Tensor) bool {
		elems, _ := t.DType.Block()
		return t.Resolved() && t.NBytes > 0 && !t.Sparse && elems > 0
	}
	var picked []int
	switch {
	case all:
		for _, i := range order {
			if eligible(m.TensorAt(i)) {
				picked = append(picked, i)
			}
		}
	default:
		first := -1
		for _, i := range order {
			t := m.TensorAt(i)
			lower := strings.ToLower(t.Name)
			if !eligible(t) || strings.Contains(lower, "embd") || strings.Contains(lower, "embed") {
				continue
			}
			if wide := t.DType.Size() > 2 && strings.Contains(t.DType.String(), "int"); !wide {
				picked = []int{i}
				break
			}
			if first < 0 {
				first = i
			}
		}
		if picked == nil && first >= 0 {
			picked = []int{first}
		}
	}
	if len(picked) == 0 {
		return Breakage{}, false
	}
	b := Breakage{File: File{Path: f.Path, Data: append([]string(nil), f.Data...)}}
	flips := map[string][]int64{} // file: offsets
	var holders []string
	for _, i := range picked {
		t := m.TensorAt(i)
		holder := f.Path
		if t.DataFile != "" {
			holder = t.DataFile
		}
		at := flipAt(t)
		if !all {
			b.What = fmt.Sprintf("byte %d of weight %q (%s %v, %d bytes) XOR 0xC0, at offset %d of %s",
				at, t.Name, t.DType, t.Shape, t.NBytes, t.Offset+at, filepath.Base(holder))
		}
		if _, ok := flips[holder]; !ok {
			holders = append(holders, holder)
		}
		if !slices.Contains(flips[holder], t.Offset+at) { // tensors that share their bytes
			flips[holder] = append(flips[holder], t.Offset+at)
		}
		b.Names = append(b.Names, t.Name)
	}
	if all {
		b.What = fmt.Sprintf("one byte of each of its %d weight(s) XOR 0xC0", len(picked))
	}
	for _, holder := range holders {
		broken := CopyBroken(tb, dir, holder, flips[holder], func(x byte) byte { return x ^ 0xC0 })
		if holder == f.Path {
			b.File.Path = broken
		}
		for i, d := range b.File.Data {
			if d == holder {
				b.File.Data[i] = broken
			}
		}
	}
	return b, true
}

// flipAt returns the offset in t's bytes of the byte FlipWeight changes:
// the most significant byte of its middle element, whose top bits (XOR
// 0xC0) are a float's sign and exponent or an 8- or 16-bit integer's top
// bits; for a wider integer its second byte (a bias moves by 16K-48K
// units, and a count or an index stays finite: a loop's bound whose top
// bits flip runs for hours); for a block or packed type the middle byte.
func flipAt(t *format.Tensor) int64 {
	e := int64(t.DType.Size())
	switch {
	case e == 0:
		return t.NBytes / 2
	case e > 2 && strings.Contains(t.DType.String(), "int"):
		return t.NBytes/e/2*e + 1
	default:
		return t.NBytes/e/2*e + e - 1
	}
}

// CopyBroken copies file into dir under a name of its own and applies
// change to the bytes at offsets offs of the copy; it returns the copy's
// path.
func CopyBroken(tb testing.TB, dir, file string, offs []int64, change func(byte) byte) string {
	tb.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	for _, off := range offs {
		if off < 0 || off >= int64(len(data)) {
			tb.Fatalf("%s: offset %d outside its %d bytes", file, off, len(data))
		}
		was := data[off]
		data[off] = change(was)
		if data[off] == was {
			tb.Fatalf("%s: the byte at %d is unchanged (%#x)", file, off, was)
		}
	}
	f, err := os.CreateTemp(dir, "broken-*-"+filepath.Base(file))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return f.Name()
}
