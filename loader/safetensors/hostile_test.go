package safetensors_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/safetensors"
	"github.com/edgeload/edgeload/mmapfile"
)

// realSeeds returns the real safetensors files, when they are there
// (hostile.Real lists only the FlatBuffer formats' files).
func realSeeds() []hostile.Seed {
	m, _ := filepath.Glob(filepath.Join(testmodels.Root(), "..", "shared", "models", "safetensors", "*.safetensors"))
	sort.Strings(m)
	var out []hostile.Seed
	for _, p := range m {
		if b, err := os.ReadFile(p); err == nil {
			out = append(out, hostile.Seed{Name: "safetensors/" + filepath.Base(p), Data: b})
		}
	}
	return out
}

// generated returns files made by Write and by hand: every dtype at two
// alignments, unaligned tensors, no tensor, empty and scalar tensors,
// unknown members and escapes in the header.
func generated(tb testing.TB) []hostile.Seed {
	ts := genTensors(3)
	out := []hostile.Seed{
		{Name: "gen/all-dtypes", Data: writeBytes(tb, ts, []safetensors.Meta{{Key: "format", Value: "pt"}}, 8)},
		{Name: "gen/all-dtypes-4k", Data: writeBytes(tb, genTensors(4), nil, 4096)},
		{Name: "gen/empty", Data: mk(`{}`, nil)},
		{Name: "gen/unaligned", Data: mk(`{"b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"w":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}}`, hostile.F32(0, 1, 2)[:9])},
		{Name: "gen/escapes", Data: mk(" {\"__metadata__\":{\"k\\n\":\"\\u00e9\\ud83d\\ude00\"},\"a\\\"\":{\"x\":[1,{\"y\":null}],\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[0,8]},\"z\":{\"dtype\":\"F4\",\"shape\":[0,2],\"data_offsets\":[8,8]}}\t", make([]byte, 8))},
	}
	return out
}

// checkFile exercises every accessor and view of an open file and checks
// what it reads against the format's rules.
func checkFile(f *safetensors.File) error {
	size := f.Size()
	if f.DataOffset() != 8+f.HeaderSize() || f.HeaderSize() > safetensors.MaxHeaderSize {
		return fmt.Errorf("header %d, data at %d", f.HeaderSize(), f.DataOffset())
	}
	segs := f.Segments()
	if len(segs) != 1 || segs[0].Offset() != f.DataOffset() || segs[0].Offset()+segs[0].Len() != size {
		return fmt.Errorf("segments %v in a %d-byte file with data at %d", segs, size, f.DataOffset())
	}
	if err := hostile.Segment("data buffer", segs[0]); err != nil {
		return err
	}
	next := f.DataOffset()
	order, err := f.UseOrder("")
	if err != nil || len(order) != f.NumTensors() {
		return fmt.Errorf("UseOrder: %d, %v", len(order), err)
	}
	for i := range f.NumTensors() {
		t := f.TensorAt(i)
		if t.Offset != next || t.Location != format.LocSegment || !t.NameExplicit || order[i] != i {
			return fmt.Errorf("tensor %d %q at %d (%v), want %d", i, t.Name, t.Offset, t.Location, next)
		}
		next += t.NBytes
		if f.TensorData(i) != t.Data {
			return fmt.Errorf("tensor %q: TensorData differs", t.Name)
		}
		if safetensors.Code(t.DType) == "" {
			return fmt.Errorf("tensor %q: dtype %v", t.Name, t.DType)
		}
		c := *t
		if el, by := t.DType.Block(); el != 1 || t.DType == format.Complex64 {
			// the typed views know whole-byte types only: view the bytes
			_ = by
			c.DType, c.Shape = format.Uint8, []int64{t.NBytes}
		}
		if err := hostile.FileTensor(&c, i); err != nil {
			return err
		}
		if k, ok := f.Lookup(t.Name); !ok || k != i {
			return fmt.Errorf("Lookup(%q) = %d, %v; want %d", t.Name, k, ok, i)
		}
	}
	if next != size {
		return fmt.Errorf("tensors end at %d of %d bytes", next, size)
	}
	for _, kv := range f.Metadata() {
		if v, ok := f.MetadataValue(kv.Key); !ok || v != kv.Value {
			return fmt.Errorf("metadata %q", kv.Key)
		}
	}
	_ = f.ReportFields()
	return f.ReportText(io.Discard)
}

// roundTrip writes f's tensors and metadata with Write and reads them
// back: the same names, dtypes, shapes and bytes.
func roundTrip(f *safetensors.File) error {
	var srcs []safetensors.Source
	for _, t := range f.Tensors() {
		b, err := t.Data.Bytes()
		if err != nil {
			return err
		}
		srcs = append(srcs, safetensors.Source{Name: t.Name, DType: t.DType, Shape: t.Shape, Data: bytes.NewReader(b)})
	}
	var buf bytes.Buffer
	if _, err := safetensors.Write(&buf, srcs, f.Metadata(), 8); err != nil {
		return fmt.Errorf("rewrite: %w", err)
	}
	g, err := safetensors.NewFile(mmapfile.NewBytes(buf.Bytes()))
	if err != nil {
		return fmt.Errorf("rewritten file: %w", err)
	}
	if g.NumTensors() != f.NumTensors() || len(g.Metadata()) != len(f.Metadata()) {
		return fmt.Errorf("rewritten: %d tensors, %d metadata", g.NumTensors(), len(g.Metadata()))
	}
	for _, t := range f.Tensors() {
		u, ok := g.Tensor(t.Name)
		if !ok {
			return fmt.Errorf("rewritten: %q missing", t.Name)
		}
		a, _ := t.Data.Bytes()
		b, _ := u.Data.Bytes()
		if u.DType != t.DType || fmt.Sprint(u.Shape) != fmt.Sprint(t.Shape) || !bytes.Equal(a, b) {
			return fmt.Errorf("rewritten: %q differs", t.Name)
		}
	}
	return nil
}

// FuzzOpen opens any bytes: a File that passes checkFile and survives a
// rewrite, or a safetensors *FormatError.
func FuzzOpen(f *testing.F) {
	for _, s := range generated(f) {
		f.Add(s.Data)
	}
	for _, c := range ruleCases() {
		f.Add(c.file)
	}
	for _, s := range realSeeds() {
		if !hostile.Fuzzing() || len(s.Data) <= hostile.MaxFuzzSeed {
			f.Add(s.Data)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := safetensors.NewFile(mmapfile.NewBytes(b))
		if err != nil {
			if err := hostile.CheckError("safetensors", err); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := checkFile(file); err != nil {
			t.Fatal(err)
		}
		if err := roundTrip(file); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSweep opens every truncation of the real and generated files and
// every single-byte mutation (0x00, 0xFF, low bit flipped) of their
// length and header. Each must give a File that passes checkFile or a
// safetensors *FormatError; no panic, no case over hostile.Timeout, no
// allocation over hostile.AllocFactor × size.
func TestSweep(t *testing.T) {
	real := realSeeds()
	if len(real) == 0 && os.Getenv("CI") == "true" {
		testmodels.Dir(t) // fails, saying where the files were expected
	}
	regionEnd := func(b []byte) (int64, error) {
		if len(b) < 8 {
			return 0, fmt.Errorf("short")
		}
		n := binary.LittleEndian.Uint64(b)
		if n > uint64(len(b))-8 {
			return 0, fmt.Errorf("header past the end")
		}
		return 8 + int64(n), nil
	}
	hostile.Sweep(t, hostile.Target{Format: "safetensors", Open: func(b []byte) (func() error, error) {
		f, err := safetensors.NewFile(mmapfile.NewBytes(b))
		if err != nil {
			return nil, err
		}
		return func() error { return checkFile(f) }, nil
	}}, hostile.SweepFiles(t, "", append(real, generated(t)...), regionEnd)...)
}

// TestErrorsNameTheFormat: every refusal of the rule cases reads
// "safetensors: ...".
func TestErrorsNameTheFormat(t *testing.T) {
	for _, c := range ruleCases() {
		if _, err := safetensors.NewFile(mmapfile.NewBytes(c.file)); err != nil && !strings.HasPrefix(err.Error(), "safetensors: ") {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
