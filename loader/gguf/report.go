package gguf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/edgeload/edgeload/loader/format"
)

// MaxInlineArray is the longest metadata array the report lists element by
// element; a longer one is summarised as {"type": element type, "len": n}.
const MaxInlineArray = 16

// ReportFields returns the GGUF members of `edgeload inspect --json`:
// "version", "alignment", "kv_count" and "metadata", an object of every
// pair in file order.
func (f *File) ReportFields() []format.Field {
	return []format.Field{
		{Key: "version", Value: f.version},
		{Key: "alignment", Value: f.align},
		{Key: "kv_count", Value: len(f.kvs)},
		{Key: "metadata", Value: metadataJSON(f.kvs)},
	}
}

// metadataJSON marshals metadata pairs as one JSON object in file order.
type metadataJSON []KV

// MarshalJSON implements json.Marshaler.
func (m metadataJSON) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kv := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv.Key)
		b.Write(k)
		b.WriteByte(':')
		writeValueJSON(&b, kv.Value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// writeValueJSON writes v as JSON: integers exactly, floats as the
// shortest decimal of their width (NaN and infinities as strings), strings
// with invalid UTF-8 replaced by U+FFFD, short arrays in full and long
// ones as {"type", "len"}.
func writeValueJSON(b *bytes.Buffer, v Value) {
	switch v.Type() {
	case TypeUint8, TypeUint16, TypeUint32, TypeUint64:
		x, _ := v.AsUint()
		b.WriteString(strconv.FormatUint(x, 10))
	case TypeInt8, TypeInt16, TypeInt32, TypeInt64:
		x, _ := v.AsInt()
		b.WriteString(strconv.FormatInt(x, 10))
	case TypeFloat32, TypeFloat64:
		x, _ := v.AsFloat()
		var f any = x
		bitSize := 64
		if v.Type() == TypeFloat32 {
			f, bitSize = float32(x), 32
		}
		if s, err := json.Marshal(f); err == nil {
			b.Write(s)
		} else { // NaN and infinities
			b.WriteString(strconv.Quote(strconv.FormatFloat(x, 'g', -1, bitSize)))
		}
	case TypeBool:
		x, _ := v.AsBool()
		b.WriteString(strconv.FormatBool(x))
	case TypeString:
		s, _ := v.AsString()
		q, _ := json.Marshal(s)
		b.Write(q)
	case TypeArray:
		a, _ := v.AsArray()
		if a.Len() > MaxInlineArray {
			fmt.Fprintf(b, `{"type":%q,"len":%d}`, a.ElemType().String(), a.Len())
			return
		}
		b.WriteByte('[')
		for i, e := range a.All() {
			if i > 0 {
				b.WriteByte(',')
			}
			writeValueJSON(b, e)
		}
		b.WriteByte(']')
	default:
		b.WriteString("null")
	}
}

// ReportText writes the header facts and one line per metadata pair (long
// strings cut, long arrays summarised).
func (f *File) ReportText(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "GGUF version %d, alignment %d, %d metadata keys, %d tensors, data section at %d\n",
		f.version, f.align, len(f.kvs), len(f.tensors), f.dataStart); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, kv := range f.kvs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", kv.Key, kv.Value.Type(), valueText(kv.Value))
	}
	return tw.Flush()
}

// valueText is a one-line rendering of v for ReportText.
func valueText(v Value) string {
	switch v.Type() {
	case TypeString:
		s, _ := v.AsString()
		if len(s) > 60 {
			return strconv.Quote(s[:60]) + "…"
		}
		return strconv.Quote(s)
	case TypeArray:
		a, _ := v.AsArray()
		return fmt.Sprintf("[%d × %s]", a.Len(), a.ElemType())
	}
	var b bytes.Buffer
	writeValueJSON(&b, v)
	return b.String()
}
