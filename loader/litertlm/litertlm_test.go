package litertlm_test

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/tflitegen"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/litertlm"
	"github.com/edgeload/edgeload/mmapfile"
)

// TestRealFile reads the real tokenizer-only container (values from
// FORMATS-tflite.md §9).
func TestRealFile(t *testing.T) {
	mf, err := mmapfile.Open(testmodels.Path(t, "litertlm/hf-tokenizer.litertlm"))
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	m, err := litertlm.NewFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if a, b, c := m.Version(); a != 1 || b != 0 || c != 0 {
		t.Errorf("version %d.%d.%d, want 1.0.0", a, b, c)
	}
	sys := map[string]string{}
	for _, kv := range m.SystemMetadata() {
		sys[kv.Key] = kv.String
	}
	if sys["arch"] != "all" || sys["version"] != "0.1" || len(sys) != 2 {
		t.Errorf("system metadata %v", sys)
	}
	ss := m.Sections()
	if len(ss) != 1 || ss[0].Type != litertlm.TypeHFTokenizerZlib || ss[0].Data.Offset() != 16384 || ss[0].Data.Len() != 609288-16384 || ss[0].Model != nil {
		t.Fatalf("sections %+v", ss)
	}
	nd := m.NamedData()
	if len(nd) != 1 || nd[0].Key != "0/HF_Tokenizer_Zlib" || nd[0].Segment != 0 || nd[0].Data != ss[0].Data || m.NumTensors() != 0 || len(m.Segments()) != 1 {
		t.Errorf("named data %+v, %d tensors", nd, m.NumTensors())
	}
}

// container writes a .litertlm holding sections (data, type), each on a
// 16 KiB boundary, with one item model_type on each.
func container(sections [][]byte, types []uint8) []byte {
	b := flatbuffers.NewBuilder(256)
	kv := func(k, v string) flatbuffers.UOffsetT {
		vs := b.CreateString(v)
		b.StartObject(1)
		b.PrependUOffsetTSlot(0, vs, 0)
		sv := b.EndObject()
		ks := b.CreateString(k)
		b.StartObject(3)
		b.PrependUOffsetTSlot(0, ks, 0)
		b.PrependByteSlot(1, 9, 0)
		b.PrependUOffsetTSlot(2, sv, 0)
		return b.EndObject()
	}
	vec := func(v []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
		b.StartVector(4, len(v), 4)
		for i := len(v) - 1; i >= 0; i-- {
			b.PrependUOffsetT(v[i])
		}
		return b.EndVector(len(v))
	}
	const block = 16 << 10
	var objs []flatbuffers.UOffsetT
	off := uint64(block)
	var begins []uint64
	for i, s := range sections {
		items := vec([]flatbuffers.UOffsetT{kv("model_type", "prefill_decode")})
		b.StartObject(4)
		b.PrependUOffsetTSlot(0, items, 0)
		b.PrependUint64Slot(1, off, 0)
		b.PrependUint64Slot(2, off+uint64(len(s)), 0)
		b.PrependByteSlot(3, types[i], 0)
		objs = append(objs, b.EndObject())
		begins = append(begins, off)
		off = (off + uint64(len(s)) + block - 1) / block * block
	}
	ov := vec(objs)
	b.StartObject(1)
	b.PrependUOffsetTSlot(0, ov, 0)
	secMeta := b.EndObject()
	ev := vec([]flatbuffers.UOffsetT{kv("arch", "all")})
	b.StartObject(1)
	b.PrependUOffsetTSlot(0, ev, 0)
	sys := b.EndObject()
	b.StartObject(2)
	b.PrependUOffsetTSlot(0, sys, 0)
	b.PrependUOffsetTSlot(1, secMeta, 0)
	b.Finish(b.EndObject())
	fbb := b.FinishedBytes()

	out := make([]byte, off)
	copy(out, "LITERTLM")
	binary.LittleEndian.PutUint32(out[8:], 1)
	binary.LittleEndian.PutUint32(out[12:], 9)
	binary.LittleEndian.PutUint64(out[24:], uint64(32+len(fbb)))
	copy(out[32:], fbb)
	for i, s := range sections {
		copy(out[begins[i]:], s)
	}
	return out
}

// TestTFLiteSection opens a container with a TFLite section in the
// large-model layout (its offsets count from the section start) and a
// tokenizer section.
func TestTFLiteSection(t *testing.T) {
	g := tflitegen.Sample(true)
	model := g.Bytes()
	tok := []byte("tokenizer bytes")
	b := container([][]byte{tok, model}, []uint8{uint8(litertlm.TypeSPTokenizer), uint8(litertlm.TypeTFLiteModel)})
	m, err := litertlm.NewFile(mmapfile.NewBytes(b))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ss := m.Sections()
	if len(ss) != 2 || ss[1].Model == nil || ss[0].Model != nil || ss[1].Items[0] != (litertlm.KeyValue{Key: "model_type", Tag: 9, String: "prefill_decode"}) {
		t.Fatalf("sections %+v", ss)
	}
	inner := ss[1].Model
	if m.NumTensors() != inner.NumTensors() || m.NumTensors() != 7 {
		t.Fatalf("%d tensors, section model has %d", m.NumTensors(), inner.NumTensors())
	}
	base := int64(32 << 10)
	for i := range m.NumTensors() {
		ct, it := m.TensorAt(i), inner.TensorAt(i)
		cb, _ := ct.Data.Bytes()
		want := g.Buffers[inner.Tensors()[i].Buffer].Data
		if ct.Name != it.Name || ct.Offset != base+it.Offset || !slices.Equal(cb, want) {
			t.Errorf("tensor %d: %q at %d = %v, want %q at %d+%d = %v", i, ct.Name, ct.Offset, cb, it.Name, base, it.Offset, want)
		}
		if err := hostile.SegmentBounds(ct.Name, ct.Data); err != nil {
			t.Error(err)
		}
	}
	if j, ok := m.Lookup("q"); !ok || m.TensorAt(j).Name != "q" {
		t.Errorf("Lookup(q) = %d, %v", j, ok)
	}
	if g := m.Groups(); !slices.Equal(g, []string{"main", "body", "2"}) {
		t.Errorf("groups %q", g)
	}
	all, err := m.UseOrder("")
	if err != nil || len(all) != 7 {
		t.Errorf("UseOrder(\"\") = %v, %v", all, err)
	}
	nd := m.NamedData()
	if len(nd) != 1 || nd[0].Key != "0/SP_Tokenizer" || nd[0].Segment != 0 {
		t.Errorf("named data %+v", nd)
	}
	if got, _ := nd[0].Data.Bytes(); string(got) != string(tok) {
		t.Errorf("tokenizer %q", got)
	}
	// Another major version and a section past the end are refused.
	bad := container([][]byte{tok, model}, []uint8{4, 3})
	binary.LittleEndian.PutUint32(bad[8:], 2)
	if _, err := litertlm.NewFile(mmapfile.NewBytes(bad)); !errors.Is(err, format.ErrUnsupportedVersion) {
		t.Errorf("major 2: %v", err)
	}
	if _, err := litertlm.NewFile(mmapfile.NewBytes(b[:33000])); !errors.Is(err, format.ErrTruncated) {
		t.Errorf("truncated: %v", err)
	}
}

// FuzzOpen opens arbitrary bytes: a container whose every view lies in
// the file, or a *format.FormatError.
func FuzzOpen(f *testing.F) {
	for _, s := range hostile.RealSeeds("litertlm") {
		f.Add(s)
	}
	f.Add(container([][]byte{[]byte("tok"), tflitegen.Sample(true).Bytes()}, []uint8{4, 3}))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := litertlm.NewFile(mmapfile.NewBytes(b))
		if err != nil {
			var fe *format.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a FormatError", err)
			}
			return
		}
		defer m.Close()
		for i, s := range m.Segments() {
			if err := hostile.SegmentBounds("segment", s); err != nil || (i > 0 && s.Offset() < m.Segments()[i-1].Offset()) {
				t.Fatal(err)
			}
		}
		for i := range m.NumTensors() {
			if err := hostile.SegmentBounds("tensor", m.TensorData(i)); err != nil {
				t.Fatal(err)
			}
		}
		for _, g := range append(m.Groups(), "") {
			// A TFLite section's operators are verified at their first
			// use: an order may fail, with a FormatError.
			if _, err := m.UseOrder(g); err != nil {
				var fe *format.FormatError
				if !errors.As(err, &fe) {
					t.Fatalf("use order %q: %v is not a FormatError", g, err)
				}
			}
		}
	})
}
