package repack_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/ptdfb"
	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/gguf"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/loader/rten"
	"github.com/edgeload/edgeload/repack"
)

// layouts are the option sets every file is repacked with.
var layouts = []struct {
	name string
	opts repack.Options
}{
	{"align16K", repack.Options{Align: 16384}},
	{"align64K-tensor64K", repack.Options{Align: 65536, TensorAlign: 65536}},
}

// expectedSums turns the independent reader's tensors into TensorSums.
func expectedSums(ts []testmodels.Tensor) []repack.TensorSum {
	out := make([]repack.TensorSum, len(ts))
	for i, t := range ts {
		out[i] = repack.TensorSum{Name: t.Name, DType: t.DType, Shape: t.Shape, SHA256: t.SHA256}
		if out[i].Shape == nil {
			out[i].Shape = []int64{}
		}
	}
	return out
}

func sums(t *testing.T, path string, data ...string) []repack.TensorSum {
	t.Helper()
	s, err := repack.Sums(path, data...)
	if err != nil {
		t.Fatalf("output does not verify: %v", err)
	}
	for i := range s {
		if s[i].Shape == nil {
			s[i].Shape = []int64{}
		}
	}
	return s
}

func sameSums(t *testing.T, what string, got, want []repack.TensorSum) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d tensors, want %d", what, len(got), len(want))
	}
	for _, d := range repack.Compare(want, got) {
		t.Errorf("%s: %s", what, d)
	}
}

// repackFile repacks in to a file in dir and returns its path and bytes;
// it also repacks the output again and checks the bytes do not change.
func repackFile(t *testing.T, in, dir, name string, opts repack.Options) (string, []byte) {
	t.Helper()
	out := filepath.Join(dir, name)
	if _, err := repack.Repack(in, out, opts); err != nil {
		t.Fatalf("Repack(%s): %v", in, err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// The same input gives the same bytes.
	out2 := filepath.Join(dir, "again-"+name)
	opts2 := opts
	if opts.Externalize != "" {
		opts2.Externalize = filepath.Join(dir, "again-"+filepath.Base(opts.Externalize))
	}
	if _, err := repack.Repack(in, out2, opts2); err != nil {
		t.Fatalf("second Repack(%s): %v", in, err)
	}
	if b2, _ := os.ReadFile(out2); !bytes.Equal(b, b2) {
		t.Errorf("repacking %s twice gives different bytes", in)
	}
	if opts.Externalize != "" {
		p1, _ := os.ReadFile(opts.Externalize)
		p2, _ := os.ReadFile(opts2.Externalize)
		if !bytes.Equal(p1, p2) {
			t.Errorf("repacking %s twice gives different .ptd bytes", in)
		}
	} else {
		// Repacking the output changes nothing more.
		out3 := filepath.Join(dir, "twice-"+name)
		if _, err := repack.Repack(out, out3, opts); err != nil {
			t.Fatalf("Repack of the output: %v", err)
		}
		if b3, _ := os.ReadFile(out3); !bytes.Equal(b, b3) {
			t.Errorf("repacking the output of %s gives different bytes", in)
		}
	}
	return out, b
}

// checkAlignment reads the output's header and FlatBuffer and checks that
// every segment (and with talign every constant) sits on its boundary.
func checkAlignment(t *testing.T, path string, b []byte, align, talign int64) {
	t.Helper()
	le := binary.LittleEndian
	segAlign := max(align, talign)
	switch loader.Sniff(b) {
	case "pte":
		if string(b[8:12]) != "eh00" {
			t.Fatalf("%s: no extended header", path)
		}
		base := int64(le.Uint64(b[24:]))
		prog := ptefb.GetRootAsProgram(b, 0)
		var seg ptefb.DataSegment
		for i := range prog.SegmentsLength() {
			prog.Segments(&seg, i)
			if abs := base + int64(seg.Offset()); abs%segAlign != 0 {
				t.Errorf("%s: segment %d at %d, not on %d", path, i, abs, segAlign)
			}
		}
		if talign == 0 {
			return
		}
		var subs []*ptefb.SubsegmentOffsets
		if cs := prog.ConstantSegment(nil); cs != nil {
			subs = append(subs, cs)
		}
		for i := range prog.MutableDataSegmentsLength() {
			var m ptefb.SubsegmentOffsets
			prog.MutableDataSegments(&m, i)
			subs = append(subs, &m)
		}
		for _, s := range subs {
			for j := range s.OffsetsLength() {
				if o := int64(s.Offsets(j)); o%talign != 0 {
					t.Errorf("%s: sub-buffer %d of segment %d at %d, not on %d", path, j, s.SegmentIndex(), o, talign)
				}
			}
		}
	case "ptd":
		base := int64(le.Uint64(b[32:]))
		m, err := loader.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		legacy := as[*ptd.File](m).Legacy()
		m.Close()
		var seg ptdfb.DataSegment
		check := func(n int, get func(*ptdfb.DataSegment, int) bool) {
			for i := range n {
				get(&seg, i)
				if abs := base + int64(seg.Offset()); abs%segAlign != 0 {
					t.Errorf("%s: segment %d at %d, not on %d", path, i, abs, segAlign)
				}
			}
		}
		if legacy {
			ft := ptdfb.GetRootAsLegacyFlatTensor(b, 0)
			check(ft.SegmentsLength(), ft.Segments)
			var tm ptdfb.LegacyTensorMetadata
			for i := range ft.TensorsLength() {
				ft.Tensors(&tm, i)
				if talign > 0 && int64(tm.Offset())%talign != 0 {
					t.Errorf("%s: tensor %d at %d in its segment, not on %d", path, i, tm.Offset(), talign)
				}
			}
		} else {
			ft := ptdfb.GetRootAsFlatTensor(b, 0)
			check(ft.SegmentsLength(), ft.Segments)
		}
	case "rten":
		if v := le.Uint32(b[4:]); v != 2 {
			t.Fatalf("%s: RTen version %d", path, v)
		}
		data := int64(le.Uint64(b[24:]))
		if data%segAlign != 0 {
			t.Errorf("%s: tensor data section at %d, not on %d", path, data, segAlign)
		}
		if talign == 0 {
			return
		}
		m, err := loader.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		for _, c := range as[*rten.Model](m).Constants() {
			if c.External() && (c.DataOffset%talign != 0 || c.Offset%talign != 0) {
				t.Errorf("%s: constant %s at %d, not on %d", path, c.Name, c.Offset, talign)
			}
		}
	case "gguf":
		m, err := loader.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if a, _ := m.Impl().(*gguf.File).MetaUint("general.alignment"); int64(a) != segAlign && !(segAlign == 32 && a == 0) {
			t.Errorf("%s: general.alignment %d, want %d", path, a, segAlign)
		}
		for _, tn := range m.Tensors() {
			if tn.Offset%segAlign != 0 {
				t.Errorf("%s: tensor %s at %d, not on %d", path, tn.Name, tn.Offset, segAlign)
			}
		}
	case "safetensors":
		// The data buffer starts on the boundary, each tensor on a multiple
		// of its element size (the format allows no gaps between them).
		data := 8 + int64(le.Uint64(b[:8]))
		if data%segAlign != 0 {
			t.Errorf("%s: data buffer at %d, not on %d", path, data, segAlign)
		}
		m, err := loader.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		for _, tn := range m.Tensors() {
			if sz := int64(tn.DType.Size()); sz > 0 && (tn.Offset-data)%sz != 0 {
				t.Errorf("%s: tensor %s of %v at %d in the data buffer", path, tn.Name, tn.DType, tn.Offset-data)
			}
		}
	default:
		// A V1 RTen model has nothing to align: it is copied as it is.
	}
}

func TestRealFiles(t *testing.T) {
	for _, in := range testmodels.All(t) {
		if strings.HasSuffix(in, ".bpte") {
			continue
		}
		want := expectedSums(testmodels.Load(t, in).Tensors)
		for _, l := range layouts {
			t.Run(filepath.Base(in)+"/"+l.name, func(t *testing.T) {
				dir := t.TempDir()
				out, b := repackFile(t, in, dir, filepath.Base(in), l.opts)
				sameSums(t, "output vs expected", sums(t, out), want)
				checkAlignment(t, out, b, l.opts.Align, l.opts.TensorAlign)
				checkBlobs(t, in, out)
				if bytes.Equal(b, mustRead(t, in)) && loader.Sniff(b) != loader.Unknown {
					t.Errorf("output is the input unchanged")
				}
			})
		}
	}
}

// TestMappingCopy repacks every real file with the copy through the
// mapping that systems without copy_file_range use.
func TestMappingCopy(t *testing.T) {
	defer repack.SetKernelCopy(false)()
	for _, in := range testmodels.All(t) {
		if strings.HasSuffix(in, ".bpte") {
			continue
		}
		t.Run(filepath.Base(in), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), filepath.Base(in))
			opts := repack.Options{Align: 4096, TensorAlign: 64}
			if _, err := repack.Repack(in, out, opts); err != nil {
				t.Fatal(err)
			}
			sameSums(t, "output vs expected", sums(t, out), expectedSums(testmodels.Load(t, in).Tensors))
			checkAlignment(t, out, mustRead(t, out), opts.Align, opts.TensorAlign)
			defer repack.SetKernelCopy(true)()
			out2 := filepath.Join(t.TempDir(), filepath.Base(in))
			if _, err := repack.Repack(in, out2, opts); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(mustRead(t, out), mustRead(t, out2)) {
				t.Error("the two copies differ")
			}
		})
	}
}

func TestRealExternalize(t *testing.T) {
	n := 0
	for _, in := range testmodels.Files(t, "pte") {
		exp := testmodels.Load(t, in)
		constants := false
		for _, tt := range exp.Tensors {
			constants = constants || tt.Location == "segment" || tt.Location == "inline"
		}
		if !constants {
			continue
		}
		n++
		for _, l := range layouts {
			t.Run(filepath.Base(in)+"/"+l.name, func(t *testing.T) {
				dir := t.TempDir()
				opts := l.opts
				opts.Externalize = filepath.Join(dir, "weights.ptd")
				out, b := repackFile(t, in, dir, filepath.Base(in), opts)
				sameSums(t, "output vs expected", sums(t, out, opts.Externalize), expectedSums(exp.Tensors))
				checkAlignment(t, out, b, l.opts.Align, l.opts.TensorAlign)
				checkAlignment(t, opts.Externalize, mustRead(t, opts.Externalize), l.opts.Align, l.opts.TensorAlign)
				checkExternal(t, in, out, opts.Externalize)
			})
		}
	}
	if n < 3 {
		t.Errorf("only %d real programs with constants", n)
	}
}

// checkExternal checks that every tensor of the program out is external
// and found in the .ptd, and that the .ptd stores each constant buffer of
// the input once: one segment per distinct data_buffer_idx.
func checkExternal(t *testing.T, in, out, data string) {
	t.Helper()
	src, err := loader.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bufs := map[uint32]bool{}
	for _, tt := range as[*pte.Program](src).Tensors() {
		if tt.Location == format.LocSegment || tt.Location == format.LocInline {
			bufs[tt.DataBufferIndex] = true
		}
	}
	m, err := loader.Open(out, loader.WithData(data))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, tt := range m.Tensors() {
		if tt.Location != format.LocExternal || tt.DataFile != data {
			t.Errorf("tensor %s: location %s in %q, want external in %s", tt.Name, tt.Location, tt.DataFile, data)
		}
	}
	d, err := loader.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got := len(d.Segments()); got != len(bufs) {
		t.Errorf("%s: %d segments for %d distinct constant buffers", data, got, len(bufs))
	}
	// Read with the generated code: an external tensor has no
	// data_buffer_idx, as ExecuTorch's exporter writes it.
	prog := ptefb.GetRootAsProgram(mustRead(t, out), 0)
	var plan ptefb.ExecutionPlan
	var ev ptefb.EValue
	var tab flatbuffers.Table
	for i := range prog.ExecutionPlanLength() {
		prog.ExecutionPlan(&plan, i)
		for j := range plan.ValuesLength() {
			if !plan.Values(&ev, j) || ev.ValType() != ptefb.KernelTypesTensor || !ev.Val(&tab) {
				continue
			}
			var tn ptefb.Tensor
			tn.Init(tab.Bytes, tab.Pos)
			if x := tn.ExtraTensorInfo(nil); x != nil && x.Location() == 1 && tn.DataBufferIdx() != 0 {
				t.Errorf("%s value %d: external with data_buffer_idx %d", plan.Name(), j, tn.DataBufferIdx())
			}
		}
	}
}

// checkBlobs compares delegate blobs and named data of in and out.
func checkBlobs(t *testing.T, in, out string) {
	t.Helper()
	a, err := loader.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := loader.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	sum := func(s interface{ SHA256() ([32]byte, error) }) string {
		h, err := s.SHA256()
		if err != nil {
			t.Fatal(err)
		}
		return hex.EncodeToString(h[:])
	}
	na, nb := a.NamedData(), b.NamedData()
	if len(na) != len(nb) {
		t.Fatalf("%d named data entries, want %d", len(nb), len(na))
	}
	for i := range na {
		if na[i].Key != nb[i].Key || sum(na[i].Data) != sum(nb[i].Data) {
			t.Errorf("named data %d: %q differs", i, na[i].Key)
		}
	}
	if as[*pte.Program](a) == nil {
		return
	}
	da, db := as[*pte.Program](a).Delegates(), as[*pte.Program](b).Delegates()
	if len(da) != len(db) {
		t.Fatalf("%d delegates, want %d", len(db), len(da))
	}
	for i := range da {
		if da[i].ID != db[i].ID || da[i].Location != db[i].Location || sum(da[i].Data) != sum(db[i].Data) {
			t.Errorf("delegate %d (%s) differs", i, da[i].ID)
		}
	}
	ma, mb := as[*pte.Program](a).Methods(), as[*pte.Program](b).Methods()
	if len(ma) != len(mb) {
		t.Fatalf("%d methods, want %d", len(mb), len(ma))
	}
	for i := range ma {
		if ma[i].Name != mb[i].Name || ma[i].NumValues() != mb[i].NumValues() || fmt.Sprint(ma[i].Chains) != fmt.Sprint(mb[i].Chains) || fmt.Sprint(ma[i].Operators) != fmt.Sprint(mb[i].Operators) {
			t.Errorf("method %s differs", ma[i].Name)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// TestReadBackCatches flips one byte of the first tensor (or blob) of each
// real file's output after it is written: Repack reads the output back,
// finds that it differs from the input, fails naming the difference, and
// leaves nothing in the output's directory.
func TestReadBackCatches(t *testing.T) {
	n := 0
	for _, in := range testmodels.All(t) {
		if strings.HasSuffix(in, ".bpte") {
			continue
		}
		t.Run(filepath.Base(in), func(t *testing.T) {
			dir := t.TempDir()
			flipped := ""
			defer repack.SetAfterWrite(func(path string) {
				m, err := loader.Open(path)
				if err != nil {
					t.Errorf("the output does not open: %v", err)
					return
				}
				var at int64 = -1
				for i := range m.NumTensors() {
					if d := m.TensorData(i); d.Len() > 0 && d.File() == m.File() {
						at, flipped = d.Offset()+d.Len()/2, "tensor "+m.TensorAt(i).Name
						break
					}
				}
				for _, nd := range m.NamedData() {
					if at < 0 && nd.Data.Len() > 0 {
						at, flipped = nd.Data.Offset()+nd.Data.Len()/2, "named data "+nd.Key
					}
				}
				if bu, ok := m.Impl().(format.BlobUser); ok {
					for _, b := range bu.GroupBlobs("") {
						if at < 0 && b.Data.Len() > 0 {
							at, flipped = b.Data.Offset()+b.Data.Len()/2, b.Name
						}
					}
				}
				m.Close()
				if at < 0 {
					return
				}
				f, err := os.OpenFile(path, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				var b [1]byte
				if _, err := f.ReadAt(b[:], at); err != nil {
					t.Fatal(err)
				}
				b[0] ^= 0x01
				if _, err := f.WriteAt(b[:], at); err != nil {
					t.Fatal(err)
				}
			})()
			_, err := repack.Repack(in, filepath.Join(dir, "out"), repack.Options{Align: 4096})
			if flipped == "" {
				if err != nil {
					t.Fatal(err)
				}
				t.Skip("no tensor, named data or blob bytes to flip")
			}
			n++
			if err == nil || !strings.Contains(err.Error(), "differs from the input") {
				t.Errorf("%s flipped: Repack gives %v, want an error saying the output differs", flipped, err)
			}
			if es, _ := os.ReadDir(dir); len(es) != 0 {
				t.Errorf("%s flipped: Repack left %s", flipped, es[0].Name())
			}
		})
	}
	if n < 10 {
		t.Errorf("only %d outputs had a byte to flip", n)
	}
}

// TestEmptyGGUF: a GGUF file without tensors (a vocabulary) has no data
// section to align: repacked at 16 KiB it grows by the general.alignment
// pair it gains, no more.
func TestEmptyGGUF(t *testing.T) {
	n := 0
	for _, in := range testmodels.Files(t, "gguf") {
		if exp := testmodels.Load(t, in); exp.ExitCode != 0 || len(exp.Tensors) > 0 {
			continue
		}
		n++
		out := filepath.Join(t.TempDir(), "out.gguf")
		res, err := repack.Repack(in, out, repack.Options{Align: 16384})
		if err != nil {
			t.Fatal(err)
		}
		// The pair: a u64 key length, the key, a u32 type and the u32 value.
		pair := int64(8 + len("general.alignment") + 4 + 4)
		if st, _ := os.Stat(in); res.Size > st.Size()+pair {
			t.Errorf("%s: %d bytes repacked, from %d", filepath.Base(in), res.Size, st.Size())
		}
	}
	if n == 0 {
		t.Error("no real GGUF file without tensors")
	}
}

// TestLiteRTLM repacks the real LiteRT-LM file and the one Google's
// builder wrote: each repacks (and is read back and compared with its
// input), and repacking the output again changes nothing.
func TestLiteRTLM(t *testing.T) {
	files := append(testmodels.Files(t, "litertlm"), "../loader/litertlm/testdata/builder.litertlm")
	for _, in := range files {
		for _, l := range layouts {
			t.Run(filepath.Base(in)+"/"+l.name, func(t *testing.T) {
				out, _ := repackFile(t, in, t.TempDir(), filepath.Base(in), l.opts)
				diffs, err := repack.Check(in, out)
				if err != nil || len(diffs) > 0 {
					t.Errorf("--check: %v %v", diffs, err)
				}
			})
		}
	}
}

// TestBundleRefused: a bundled program is not rewritten (its embedded
// program would be written alone, without its test suites): the repack
// is refused and leaves nothing.
func TestBundleRefused(t *testing.T) {
	for _, in := range append(testmodels.Files(t, "pte"), "../testdata/tiny.bpte") {
		if !strings.HasSuffix(in, ".bpte") {
			continue
		}
		dir := t.TempDir()
		_, err := repack.Repack(in, filepath.Join(dir, "out.bpte"), repack.Options{})
		if err == nil || !strings.Contains(err.Error(), "cannot rewrite") {
			t.Errorf("%s: %v, want a refusal", filepath.Base(in), err)
		}
		if es, _ := os.ReadDir(dir); len(es) != 0 {
			t.Errorf("%s: the refused repack left %s", filepath.Base(in), es[0].Name())
		}
	}
}
