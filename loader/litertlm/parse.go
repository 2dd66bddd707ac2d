package litertlm

import (
	"cmp"
	"encoding/binary"
	"slices"
	"strconv"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/litertlmfb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/nameindex"
	"github.com/edgeload/edgeload/loader/tflite"
	"github.com/edgeload/edgeload/segment"
)

var le = binary.LittleEndian

const tagStringValue = uint8(litertlmfb.VDataStringValue)

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
	root := litertlmfb.GetRootAsLiteRTLMMetaData(buf, 0)
	// kvs reads n KeyValuePairs (the verifier refuses a tag without a value).
	kvs := func(n int, get func(*litertlmfb.KeyValuePair, int) bool) []KeyValue {
		out := make([]KeyValue, n)
		var kv litertlmfb.KeyValuePair
		var v flatbuffers.Table
		var sv litertlmfb.StringValue
		for i := range out {
			get(&kv, i)
			out[i] = KeyValue{Key: string(kv.Key()), Tag: uint8(kv.ValueType())}
			if out[i].Tag == tagStringValue && kv.Value(&v) {
				sv.Init(v.Bytes, v.Pos)
				out[i].String = string(sv.Value())
			}
		}
		return out
	}
	if sys := root.SystemMetadata(nil); sys != nil {
		m.system = kvs(sys.EntriesLength(), sys.Entries)
	}
	secs := root.SectionMetadata(nil)
	if secs == nil {
		return format.Errorf(formatName, "LiteRTLMMetaData.section_metadata", HeaderSize+int64(root.Table().Pos), "no section metadata")
	}
	n := secs.ObjectsLength()
	m.sections = make([]Section, n)
	type span struct{ begin, end uint64 }
	spans := make([]span, n)
	var so litertlmfb.SectionObject
	for i := range m.sections {
		secs.Objects(&so, i)
		tab := so.Table()
		t := HeaderSize + int64(tab.Pos)
		s := &m.sections[i]
		s.Type = DataType(so.DataType())
		s.Items = kvs(so.ItemsLength(), so.Items)
		begin, stop := so.BeginOffset(), so.EndOffset()
		s.begin, s.end = t+int64(tab.Offset(6)), t+int64(tab.Offset(8)) // begin_offset, end_offset (ids 1, 2)
		field := func() string { return "SectionMetadata.objects[" + strconv.Itoa(i) + "]" }
		if begin < end || stop < begin || stop > uint64(size) {
			return format.Wrapf(format.ErrTruncated, formatName, field(), t,
				"section [%d, %d) outside [%d, %d) (want it after the header, inside the file)", begin, stop, end, size)
		}
		spans[i] = span{begin, stop}
		if s.Data, err = segment.New(m.mf, int64(begin), int64(stop-begin)); err != nil {
			return format.Wrapf(format.ErrTruncated, formatName, field(), t, "%v", err)
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
