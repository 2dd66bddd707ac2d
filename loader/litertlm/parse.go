package litertlm

import (
	"cmp"
	"encoding/binary"
	"slices"
	"strconv"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/litertlmfb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/nameindex"
	"github.com/edgeload/edgeload/loader/tflite"
	"github.com/edgeload/edgeload/segment"
)

var le = binary.LittleEndian

const tagStringValue = uint8(litertlmfb.VDataStringValue)

// fb reads a FlatBuffer that litertlmfb.VerifyLiteRTLMMetaData (generated
// from internal/schema/litertlm.fbs) has verified, positions relative to
// its start.
type fb []byte

func (b fb) u32(p int64) uint32 { return le.Uint32(b[p : p+4]) }

func (b fb) slot(t int64, id int) int64 {
	vt := t - int64(int32(b.u32(t)))
	vtsize := int64(le.Uint16(b[vt : vt+2]))
	if e := 4 + 2*int64(id); e+2 <= vtsize {
		return int64(le.Uint16(b[vt+e : vt+e+2]))
	}
	return 0
}

func (b fb) ref(t int64, id int) int64 {
	if fo := b.slot(t, id); fo != 0 {
		return t + fo + int64(b.u32(t+fo))
	}
	return 0
}

func (b fb) vector(t int64, id int) (start, n int64) {
	if v := b.ref(t, id); v != 0 {
		return v + 4, int64(b.u32(v))
	}
	return 0, 0
}

func (b fb) str(t int64, id int) string {
	s, n := b.vector(t, id)
	return string(b[s : s+n])
}

func (b fb) scalar(t int64, id, size int) uint64 {
	fo := b.slot(t, id)
	if fo == 0 {
		return 0
	}
	p := t + fo
	switch size {
	case 1:
		return uint64(b[p])
	case 8:
		return le.Uint64(b[p : p+8])
	}
	return uint64(b.u32(p))
}

func (m *Model) parse() error {
	size := m.mf.Len()
	var h [HeaderSize]byte
	if size < HeaderSize {
		return format.Wrapf(format.ErrTruncated, formatName, "", 0, "file of %d bytes is shorter than the %d-byte header", size, HeaderSize)
	}
	if _, err := m.mf.ReadAt(h[:], 0); err != nil {
		return format.Wrapf(format.ErrTruncated, formatName, "", 0, "reading the header: %v", err)
	}
	if string(h[:8]) != Magic {
		return format.Wrapf(format.ErrUnknownFormat, formatName, "magic", 0, "magic %q, want %q", h[:8], Magic)
	}
	m.major, m.minor, m.patch = le.Uint32(h[8:]), le.Uint32(h[12:]), le.Uint32(h[16:])
	if m.major != MajorVersion {
		return format.Wrapf(format.ErrUnsupportedVersion, formatName, "major_version", 8, "version %d.%d.%d (want major %d)", m.major, m.minor, m.patch, MajorVersion)
	}
	end := le.Uint64(h[24:])
	if end < HeaderSize+8 || end > uint64(size) || end-HeaderSize > fbverify.MaxSize {
		return format.Wrapf(format.ErrTruncated, formatName, "header_end_offset", 24, "header end %d outside [%d, %d] (the file's size)", end, HeaderSize+8, size)
	}
	m.headerEnd = int64(end)
	buf, err := m.mf.View(HeaderSize, int64(end)-HeaderSize)
	if err != nil {
		return format.Wrapf(format.ErrTruncated, formatName, "", HeaderSize, "%v", err)
	}
	opt := fbverify.Options{Format: formatName, Base: HeaderSize}
	if err := fbverify.NewWalk(buf, opt).Verify("LiteRTLMMetaData", litertlmfb.VerifyLiteRTLMMetaData); err != nil {
		return err
	}
	b := fb(buf)
	root := int64(b.u32(0))
	// kvs reads a vector of KeyValuePair (string values verified with it).
	kvs := func(t int64, id int) ([]KeyValue, error) {
		start, n := b.vector(t, id)
		out := make([]KeyValue, n)
		for i := range out {
			e := start + 4*int64(i)
			kv := e + int64(b.u32(e))
			out[i].Key = b.str(kv, 0)
			out[i].Tag = uint8(b.scalar(kv, 1, 1))
			if out[i].Tag != tagStringValue {
				continue
			}
			// The verifier refuses a tag without a value.
			out[i].String = b.str(b.ref(kv, 2), 0)
		}
		return out, nil
	}
	if sys := b.ref(root, 0); sys != 0 {
		if m.system, err = kvs(sys, 0); err != nil {
			return err
		}
	}
	secs := b.ref(root, 1)
	if secs == 0 {
		return format.Errorf(formatName, "LiteRTLMMetaData.section_metadata", HeaderSize+root, "no section metadata")
	}
	start, n := b.vector(secs, 0)
	m.sections = make([]Section, n)
	type span struct{ begin, end uint64 }
	spans := make([]span, n)
	for i := range m.sections {
		e := start + 4*int64(i)
		t := e + int64(b.u32(e))
		s := &m.sections[i]
		s.Type = DataType(b.scalar(t, 3, 1))
		if s.Items, err = kvs(t, 0); err != nil {
			return err
		}
		begin, stop := b.scalar(t, 1, 8), b.scalar(t, 2, 8)
		s.begin, s.end = HeaderSize+t+b.slot(t, 1), HeaderSize+t+b.slot(t, 2)
		field := func() string { return "SectionMetadata.objects[" + strconv.Itoa(i) + "]" }
		if begin < end || stop < begin || stop > uint64(size) {
			return format.Wrapf(format.ErrTruncated, formatName, field(), HeaderSize+t,
				"section [%d, %d) outside [%d, %d) (want it after the header, inside the file)", begin, stop, end, size)
		}
		spans[i] = span{begin, stop}
		if s.Data, err = segment.New(m.mf, int64(begin), int64(stop-begin)); err != nil {
			return format.Wrapf(format.ErrTruncated, formatName, field(), HeaderSize+t, "%v", err)
		}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(spans[a].begin, spans[b].begin) })
	for k := 1; k < len(order); k++ {
		if a, b := spans[order[k-1]], spans[order[k]]; b.begin < a.end {
			return format.Errorf(formatName, "SectionMetadata.objects", -1, "sections [%d, %d) and [%d, %d) overlap", a.begin, a.end, b.begin, b.end)
		}
	}
	for _, i := range order {
		m.segs = append(m.segs, m.sections[i].Data)
	}
	m.segSec = order
	segOf := make([]int, n)
	for k, i := range order {
		segOf[i] = k
	}
	for i := range m.sections {
		s := &m.sections[i]
		if s.Type != TypeTFLiteModel {
			m.named = append(m.named, format.NamedData{Key: strconv.Itoa(i) + "/" + s.Type.String(), Segment: segOf[i], Data: s.Data})
			continue
		}
		if s.sub, err = m.mf.Sub(s.Data.Offset(), s.Data.Len()); err != nil {
			return format.Wrapf(format.ErrTruncated, formatName, "", s.Data.Offset(), "section %d: %v", i, err)
		}
		if s.Model, err = tflite.NewFile(s.sub); err != nil {
			return err // a tflite FormatError, offsets relative to the section
		}
		m.models = append(m.models, i)
	}
	return m.list()
}

// list gathers the TFLite sections' tensors (absolute offsets) and groups.
func (m *Model) list() error {
	prefix := func(s int, name string) string {
		if len(m.models) > 1 {
			return strconv.Itoa(s) + "/" + name
		}
		return name
	}
	for _, s := range m.models {
		sec := &m.sections[s]
		base := sec.Data.Offset()
		for i := range sec.Model.NumTensors() {
			t := *sec.Model.TensorAt(i)
			d, err := segment.New(m.mf, base+t.Data.Offset(), t.Data.Len())
			if err != nil {
				return format.Wrapf(format.ErrTruncated, formatName, "", base, "%v", err)
			}
			t.Name, t.Data, t.Offset = prefix(s, t.Name), d, d.Offset()
			m.tensors = append(m.tensors, t)
			m.from = append(m.from, [2]int{s, i})
		}
		for g, name := range sec.Model.Groups() {
			m.groups = append(m.groups, prefix(s, name))
			m.gfrom = append(m.gfrom, [2]int{s, g})
		}
	}
	m.index = nameindex.New(len(m.tensors), func(i int) string { return m.tensors[i].Name })
	return nil
}
