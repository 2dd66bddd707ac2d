package pte

import (
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/ptefb"
)

// NumValues returns the number of values of the plan.
func (m *Method) NumValues() int { return m.nv }

// Value decodes value i of the plan from the verified FlatBuffer. Lists
// and tensor values allocate; the result is the caller's. It fails for an
// index out of range, a closed program or a method whose values fail the
// checks Open leaves (tensors without data, tensor lists), which the first
// Value makes.
func (m *Method) Value(i int) (Value, error) {
	p := m.p
	if i < 0 || i >= m.nv {
		return Value{}, fmt.Errorf("pte: method %q: value %d out of range (%d values)", m.Name, i, m.nv)
	}
	if err := m.once(&m.check1.values, &m.check1.valuesErr, m.checkValues); err != nil {
		return Value{}, err
	}
	var plan ptefb.ExecutionPlan
	plan.Init(p.fb, m.pos)
	var ev ptefb.EValue
	plan.Values(&ev, i)
	var val Value
	var tab flatbuffers.Table
	// Every value was checked; the tag still comes first, since
	// with tag NONE the value offset was never verified.
	tag := ev.ValType()
	if tag == ptefb.KernelTypesNONE || !ev.Val(&tab) {
		return val, nil
	}
	val.Kind = ValueKind(tag)
	// Every union member is a table: x is read as the tag's type.
	var x ptefb.Int
	x.Init(tab.Bytes, tab.Pos)
	switch tag {
	case ptefb.KernelTypesInt:
		val.Int = x.IntVal()
	case ptefb.KernelTypesBool:
		val.Bool = (*ptefb.Bool)(&x).BoolVal()
	case ptefb.KernelTypesDouble:
		val.Double = (*ptefb.Double)(&x).DoubleVal()
	case ptefb.KernelTypesString:
		val.String = string((*ptefb.String)(&x).StringVal())
	case ptefb.KernelTypesIntList:
		l := (*ptefb.IntList)(&x)
		val.Ints = items(l.ItemsLength(), l.Items)
	case ptefb.KernelTypesDoubleList:
		l := (*ptefb.DoubleList)(&x)
		val.Doubles = items(l.ItemsLength(), l.Items)
	case ptefb.KernelTypesBoolList:
		l := (*ptefb.BoolList)(&x)
		val.Bools = items(l.ItemsLength(), l.Items)
	case ptefb.KernelTypesTensorList:
		l := (*ptefb.TensorList)(&x)
		val.Items = items(l.ItemsLength(), l.Items)
	case ptefb.KernelTypesOptionalTensorList:
		l := (*ptefb.OptionalTensorList)(&x)
		val.Items = items(l.ItemsLength(), l.Items)
	case ptefb.KernelTypesTensor:
		val.Tensor = m.tensorValue((*ptefb.Tensor)(&x), i)
	}
	return val, nil
}

// tensorValue decodes a tensor value that was checked.
func (m *Method) tensorValue(x *ptefb.Tensor, v int) *TensorValue {
	p := m.p
	tv := &TensorValue{Tensor: int(p.valueTensor[m.Index][v])}
	tv.ScalarType = x.ScalarType()
	tv.DType, _ = dtypeOf(tv.ScalarType)
	tv.Sizes = items(x.SizesLength(), func(k int) int64 { return int64(x.Sizes(k)) })
	if nd := x.DimOrderLength(); nd > 0 {
		tv.DimOrder = items(nd, x.DimOrder)
	}
	tv.RequiresGrad = x.RequiresGrad()
	tv.DataBufferIndex = x.DataBufferIdx()
	tv.ShapeDynamism = x.ShapeDynamism()
	var ai ptefb.AllocationDetails
	if x.AllocationInfo(&ai) != nil {
		tv.Planned = true
		tv.MemoryID = ai.MemoryId()
		tv.MemoryOffset = uint64(ai.MemoryOffsetHigh())<<32 | uint64(ai.MemoryOffsetLow())
	}
	external := false
	var eti ptefb.ExtraTensorInfo
	if x.ExtraTensorInfo(&eti) != nil {
		tv.FullyQualifiedName = string(eti.FullyQualifiedName())
		external = eti.Location() == locExternal
	}
	tv.Location = location(external, tv.DataBufferIndex, tv.Planned, p.inlineConsts)
	return tv
}

// Values decodes every value of the plan (see [Method.Value]).
func (m *Method) Values() ([]Value, error) {
	vals := make([]Value, m.nv)
	for i := range vals {
		v, err := m.Value(i)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

// items copies the n elements of a verified FlatBuffer vector read by at.
func items[T any](n int, at func(int) T) []T {
	out := make([]T, n)
	for k := range out {
		out[k] = at(k)
	}
	return out
}
