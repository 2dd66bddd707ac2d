package format

import "github.com/edgeload/edgeload/segment"

// Tensor is the format-neutral description of a tensor whose bytes a file
// holds (or names, for an external tensor). The format packages embed it in
// their own tensor types, and loader lists every format's tensors with it.
type Tensor struct {
	// Name is the tensor's name: a fully-qualified name, a .ptd key, an RTen
	// node name, or a path the loader made up (see NameExplicit).
	Name string
	// NameExplicit is false when the file gave no name and Name was made up
	// (e.g. "forward/values/3").
	NameExplicit bool
	DType        DType
	Shape        []int64
	// DimOrder is the dimension order where the format records one (pte,
	// ptd); nil means contiguous (0, 1, ..., n-1).
	DimOrder []uint8
	Location Location
	// Offset is the absolute offset of the first byte in the file that holds
	// the data (DataFile for a resolved external tensor); -1 when unknown
	// (an external tensor not linked to its data).
	Offset int64
	// NBytes is the size of the bytes: numel × element size (whole blocks
	// for packed and block types), unless Sparse or DType is String.
	NBytes int64
	// Sparse is true when the bytes are a sparse encoding of the shape
	// (a TFLite tensor with sparsity parameters), whose size is NBytes.
	Sparse bool
	// Data is a zero-copy view of the bytes; the zero Segment when the data
	// is not available (unresolved external).
	Data segment.Segment
	// DataFile names the file holding an external tensor's bytes once it is
	// resolved; empty otherwise.
	DataFile string
}

// Resolved reports whether the tensor's bytes are available through Data.
func (t *Tensor) Resolved() bool { return t.Offset >= 0 }

// NamedData is a key-addressed blob: a pte Program.named_data entry or a
// ptd named-data entry.
type NamedData struct {
	Key     string
	Segment int             // index of the segment holding the blob; -1 when it lies in none (a file appended to a TFLite model)
	Data    segment.Segment // the blob's bytes (Offset() is absolute)
}
