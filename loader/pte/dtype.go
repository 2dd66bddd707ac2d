package pte

import (
	"github.com/edgeload/edgeload/internal/executorch"
	"github.com/edgeload/edgeload/loader/format"
)

// DTypeOf returns the element type of an ExecuTorch ScalarType (the
// codes FORMATS.md §1 lists). Reserved values (8-10 complex, 18-21 bit types)
// and values outside the schema are a *format.FormatError wrapping
// format.ErrMalformed.
func DTypeOf(st int8) (format.DType, error) {
	d, msg := executorch.ScalarTypeDType(st)
	if msg != "" {
		return d, format.Errorf(formatName, "Tensor.scalar_type", -1, "%s", msg)
	}
	return d, nil
}

// dtypeOf is DTypeOf with the problem as a message.
func dtypeOf(st int8) (format.DType, string) { return executorch.ScalarTypeDType(st) }

// ScalarTypeOf returns the ExecuTorch ScalarType of a DType; ok is false for
// types ExecuTorch has no ScalarType for.
func ScalarTypeOf(d format.DType) (st int8, ok bool) { return executorch.DTypeScalarType(d) }
