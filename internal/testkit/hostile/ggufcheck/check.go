package ggufcheck

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/gguf"
	"github.com/edgeload/edgeload/mmapfile"
)

// RegionEnd returns where a valid GGUF file's header region ends: the
// start of its data section.
func RegionEnd(b []byte) (int64, error) {
	f, err := gguf.NewFile(mmapfile.NewBytes(b))
	if err != nil {
		return 0, err
	}
	return f.DataOffset(), nil
}

// File exercises every accessor and view of an opened GGUF file: header
// facts, the data segment, every metadata value (arrays element by
// element), every tensor (views, shape against ne, offsets, lookups), the
// use order, the report, and a rewrite with another alignment that must
// read back with the same metadata and tensors.
func File(f *gguf.File) error {
	size := f.Size()
	if v := f.Version(); v != 2 && v != 3 {
		return fmt.Errorf("gguf: version %d accepted", v)
	}
	a := f.Alignment()
	if a < 8 || a&(a-1) != 0 {
		return fmt.Errorf("gguf: alignment %d accepted", a)
	}
	if f.HeaderEnd() > f.DataOffset() || f.DataOffset() > size || f.DataOffset()-f.HeaderEnd() >= a {
		return fmt.Errorf("gguf: header end %d, data %d, size %d, alignment %d", f.HeaderEnd(), f.DataOffset(), size, a)
	}
	segs := f.Segments()
	if len(segs) != 1 || segs[0].Offset() != f.DataOffset() || segs[0].Len() != size-f.DataOffset() {
		return fmt.Errorf("gguf: segments %v, want the data section [%d, %d)", segs, f.DataOffset(), size)
	}
	if err := hostile.Segment("data section", segs[0]); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	if f.NamedData() != nil || f.Groups() != nil || f.Check() != nil {
		return errors.New("gguf: named data, groups or Check")
	}
	for _, kv := range f.KVs() {
		v, ok := f.Metadata(kv.Key)
		if !ok || v.Offset() != kv.Value.Offset() {
			return fmt.Errorf("gguf: Metadata(%q) does not find its pair", kv.Key)
		}
		if err := value(kv.Key, v, 0); err != nil {
			return err
		}
	}
	if err := tensors(f); err != nil {
		return err
	}
	order, err := f.UseOrder("")
	if err != nil || len(order) != f.NumTensors() {
		return fmt.Errorf("gguf: UseOrder: %d of %d, %v", len(order), f.NumTensors(), err)
	}
	seen := make([]bool, len(order))
	for _, i := range order {
		if i < 0 || i >= len(seen) || seen[i] {
			return fmt.Errorf("gguf: UseOrder is not a permutation: %v", order)
		}
		seen[i] = true
	}
	if _, err := f.UseOrder("x"); !errors.Is(err, format.ErrNotFound) {
		return fmt.Errorf("gguf: UseOrder(\"x\") = %v", err)
	}
	fields := map[string]any{}
	for _, fl := range f.ReportFields() {
		fields[fl.Key] = fl.Value
	}
	if j, err := json.Marshal(fields); err != nil || !json.Valid(j) {
		return fmt.Errorf("gguf: report JSON: %v", err)
	}
	if err := f.ReportText(io.Discard); err != nil {
		return fmt.Errorf("gguf: report text: %v", err)
	}
	return rewrite(f)
}

// value reads every part of v.
func value(key string, v gguf.Value, depth int) error {
	t := v.Type()
	_, okU := v.AsUint()
	_, okI := v.AsInt()
	_, okF := v.AsFloat()
	_, okB := v.AsBool()
	s, okS := v.AsString()
	a, okA := v.AsArray()
	switch {
	case t <= gguf.TypeInt32 || t == gguf.TypeUint64 || t == gguf.TypeInt64:
		if !okU && !okI {
			return fmt.Errorf("gguf: %q: integer %v reads as neither", key, t)
		}
	case t == gguf.TypeFloat32 || t == gguf.TypeFloat64:
		if !okF {
			return fmt.Errorf("gguf: %q: float does not read", key)
		}
	case t == gguf.TypeBool:
		if !okB {
			return fmt.Errorf("gguf: %q: bool does not read", key)
		}
	case t == gguf.TypeString:
		if b, _ := v.AsBytes(); !okS || string(b) != s {
			return fmt.Errorf("gguf: %q: string does not read", key)
		}
	case t == gguf.TypeArray:
		if !okA || depth >= gguf.MaxArrayDepth {
			return fmt.Errorf("gguf: %q: array at depth %d", key, depth)
		}
		n := int64(0)
		for i, e := range a.All() {
			if i != n || e.Type() != a.ElemType() {
				return fmt.Errorf("gguf: %q: element %d is %v of %v", key, i, e.Type(), a.ElemType())
			}
			if err := value(key, e, depth+1); err != nil {
				return err
			}
			n++
		}
		if n != a.Len() {
			return fmt.Errorf("gguf: %q: %d elements of %d", key, n, a.Len())
		}
		if n > 0 {
			last, ok := a.At(n - 1)
			if !ok || last.Type() != a.ElemType() {
				return fmt.Errorf("gguf: %q: At(%d)", key, n-1)
			}
		}
		if _, ok := a.At(n); ok {
			return fmt.Errorf("gguf: %q: At(Len) succeeded", key)
		}
	default:
		return fmt.Errorf("gguf: %q: type %v", key, t)
	}
	return nil
}

// tensors checks every tensor and that no two overlap.
func tensors(f *gguf.File) error {
	ts := f.Tensors()
	if len(ts) != f.NumTensors() {
		return errors.New("gguf: Tensors and NumTensors disagree")
	}
	for i := range ts {
		t := f.TensorInfo(i)
		if f.TensorAt(i) != &t.Tensor || !hostile.SameView(f.TensorData(i), t.Data) {
			return fmt.Errorf("gguf: tensor %d: TensorAt, TensorInfo and TensorData disagree", i)
		}
		if t.NDims != len(t.Shape) || t.Location != format.LocSegment || !t.NameExplicit {
			return fmt.Errorf("gguf: tensor %q: %d dims, shape %v, %v", t.Name, t.NDims, t.Shape, t.Location)
		}
		for j := range t.NDims {
			if t.Shape[j] != t.NE[t.NDims-1-j] {
				return fmt.Errorf("gguf: tensor %q: shape %v is not the reverse of ne %v", t.Name, t.Shape, t.NE)
			}
		}
		for j := t.NDims; j < 4; j++ {
			if t.NE[j] != 1 {
				return fmt.Errorf("gguf: tensor %q: ne %v past %d dims", t.Name, t.NE, t.NDims)
			}
		}
		if t.Type.DType() != t.DType || t.Offset != f.DataOffset()+t.RelOffset || t.RelOffset%f.Alignment() != 0 {
			return fmt.Errorf("gguf: tensor %q: type %v dtype %v offset %d rel %d", t.Name, t.Type, t.DType, t.Offset, t.RelOffset)
		}
		elems, bsize := t.Block()
		if t.NE[0]%int64(elems) != 0 || t.NumBlocks()*int64(bsize) != t.NBytes {
			return fmt.Errorf("gguf: tensor %q: %d blocks of %d bytes for %d bytes", t.Name, t.NumBlocks(), bsize, t.NBytes)
		}
		if elems == 1 {
			if err := hostile.FileTensor(&t.Tensor, i); err != nil {
				return fmt.Errorf("gguf: %w", err)
			}
		} else {
			// block types: the typed view is the raw blocks
			_, nb, ok := format.Numel(t.Shape, t.DType, 1<<62)
			if !ok || nb != t.NBytes || t.Data.Len() != t.NBytes || t.Data.Offset() != t.Offset {
				return fmt.Errorf("gguf: tensor %q: %d bytes (%v), view %v", t.Name, nb, ok, t.Data)
			}
			check := hostile.SegmentBounds
			if i < 256 {
				check = hostile.Segment
			}
			if err := check("tensor "+t.Name, t.Data); err != nil {
				return fmt.Errorf("gguf: %w", err)
			}
		}
		if j, ok := f.Lookup(t.Name); !ok || j != i {
			return fmt.Errorf("gguf: Lookup(%q) = %d, %v; want %d", t.Name, j, ok, i)
		}
	}
	byOff := make([]*gguf.TensorInfo, 0, len(ts))
	for i := range ts {
		if ts[i].NBytes > 0 {
			byOff = append(byOff, &ts[i])
		}
	}
	slices.SortFunc(byOff, func(a, b *gguf.TensorInfo) int { return cmp.Compare(a.Offset, b.Offset) })
	for k := 1; k < len(byOff); k++ {
		if byOff[k].Offset < byOff[k-1].Offset+byOff[k-1].NBytes {
			return fmt.Errorf("gguf: tensors %q and %q overlap", byOff[k-1].Name, byOff[k].Name)
		}
	}
	return nil
}

// rewrite writes f with alignment 64 and checks the copy: same metadata
// bytes (but general.alignment), same tensors and bytes, on the new
// boundary.
func rewrite(f *gguf.File) error {
	var buf bytes.Buffer
	n, err := f.WriteAligned(&buf, 64)
	if err != nil || n != int64(buf.Len()) {
		return fmt.Errorf("gguf: WriteAligned: %d bytes of %d, %v", n, buf.Len(), err)
	}
	g, err := gguf.NewFile(mmapfile.NewBytes(buf.Bytes()))
	if err != nil {
		return fmt.Errorf("gguf: the rewritten file does not open: %w", err)
	}
	return Same(f, g, 64)
}

// Same reports whether g is f laid out again with alignment align: the
// same metadata (but general.alignment = align), the same tensors in the
// same order with the same bytes, each on the alignment.
func Same(f, g *gguf.File, align int64) error {
	if g.Alignment() != align || g.Version() != f.Version() {
		return fmt.Errorf("gguf: rewritten: version %d alignment %d", g.Version(), g.Alignment())
	}
	gk := g.KVs()
	var k int
	for _, kv := range f.KVs() {
		if kv.Key == "general.alignment" {
			continue
		}
		for k < len(gk) && gk[k].Key == "general.alignment" {
			k++
		}
		if k >= len(gk) || gk[k].Key != kv.Key || gk[k].Value.Type() != kv.Value.Type() || !sameBytes(kv.Value, gk[k].Value) {
			return fmt.Errorf("gguf: rewritten: metadata %q differs", kv.Key)
		}
		k++
	}
	if g.NumTensors() != f.NumTensors() {
		return fmt.Errorf("gguf: rewritten: %d tensors of %d", g.NumTensors(), f.NumTensors())
	}
	for i := range f.NumTensors() {
		a, b := f.TensorInfo(i), g.TensorInfo(i)
		if a.Name != b.Name || a.Type != b.Type || a.NE != b.NE || a.NBytes != b.NBytes || b.Offset%align != 0 {
			return fmt.Errorf("gguf: rewritten: tensor %d %q differs", i, a.Name)
		}
		x, _ := a.Data.Bytes()
		y, _ := b.Data.Bytes()
		if !bytes.Equal(x, y) {
			return fmt.Errorf("gguf: rewritten: tensor %q bytes differ", a.Name)
		}
	}
	return nil
}

// sameBytes compares two values' encodings, from their offsets to the
// next value (the file's bytes).
func sameBytes(a, b gguf.Value) bool {
	var x, y bytes.Buffer
	encode(&x, a)
	encode(&y, b)
	return bytes.Equal(x.Bytes(), y.Bytes())
}

// encode writes a canonical rendering of v, element by element.
func encode(w *bytes.Buffer, v gguf.Value) {
	var tmp [32]byte
	w.Write(strconv.AppendUint(tmp[:0], uint64(v.Type()), 10))
	w.WriteByte(':')
	if u, ok := v.AsUint(); ok {
		w.Write(strconv.AppendUint(tmp[:0], u, 10))
	} else if i, ok := v.AsInt(); ok {
		w.Write(strconv.AppendInt(tmp[:0], i, 10))
	} else if fl, ok := v.AsFloat(); ok {
		w.Write(strconv.AppendUint(tmp[:0], math.Float64bits(fl), 16))
	} else if b, ok := v.AsBool(); ok {
		w.Write(strconv.AppendBool(tmp[:0], b))
	} else if s, ok := v.AsBytes(); ok {
		w.Write(strconv.AppendInt(tmp[:0], int64(len(s)), 10))
		w.Write(s)
	} else if a, ok := v.AsArray(); ok {
		w.WriteByte('[')
		w.Write(strconv.AppendUint(tmp[:0], uint64(a.ElemType()), 10))
		for _, e := range a.All() {
			w.WriteByte(',')
			encode(w, e)
		}
		w.WriteByte(']')
	}
}
