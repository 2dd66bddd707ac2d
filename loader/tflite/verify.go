package tflite

import (
	"encoding/binary"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/fbverify"
	"github.com/edgeload/edgeload/mmapfile"
)

// Every check the package makes on the FlatBuffer's structure lives in this
// file: the description of the tables the reader reaches (for
// loader/internal/fbverify, which follows every offset with 64-bit
// arithmetic) and the region that is verified. The reader (read.go) reads
// only fields described here, after Verify has accepted the buffer; the
// meaning of the values (indices, byte ranges) is checked where they are
// read, through inRange and fileRange below.

func scalar(name string, id, size int) fbverify.Field {
	return fbverify.Field{Name: name, ID: id, Kind: fbverify.Scalar, Size: size}
}

func scalars(name string, id, size int) fbverify.Field {
	return fbverify.Field{Name: name, ID: id, Kind: fbverify.ScalarVector, Size: size}
}

func str(name string, id int) fbverify.Field {
	return fbverify.Field{Name: name, ID: id, Kind: fbverify.String}
}

func tableRef(name string, id int, t *fbverify.Table) fbverify.Field {
	return fbverify.Field{Name: name, ID: id, Kind: fbverify.TableRef, Table: t}
}

func tables(name string, id int, t *fbverify.Table) fbverify.Field {
	return fbverify.Field{Name: name, ID: id, Kind: fbverify.TableVector, Table: t}
}

// union describes a union at ids id (tag) and id+1 (value) whose members
// of interest are members (tag -> table); other tags are verified as bare
// tables (upstream appends members).
func union(name string, id int, members map[int]*fbverify.Table) fbverify.Field {
	n := 0
	for tag := range members {
		n = max(n, tag+1)
	}
	u := make([]*fbverify.Table, n)
	for tag, t := range members {
		u[tag] = t
	}
	return fbverify.Field{Name: name, ID: id, Kind: fbverify.Union, Union: u, AllowUnknown: true}
}

// Union tags the reader follows (schema: internal/schema/tflite.fbs).
const (
	tagCustomQuantization    = 1
	tagBlockwiseQuantization = 2

	tagInt32Vector  = 1
	tagUint16Vector = 2
	tagUint8Vector  = 3

	tagCallOptions     = 16
	tagIfOptions       = 92
	tagWhileOptions    = 93
	tagCallOnceOptions = 103

	tagStableHLOCompositeOptions = 21 // in builtin_options_2
)

var (
	tCustomQuant = &fbverify.Table{Name: "CustomQuantization", Fields: []fbverify.Field{scalars("custom", 0, 1)}}
	tBlockwise   = &fbverify.Table{Name: "BlockwiseQuantization", Fields: []fbverify.Field{
		scalar("scales", 0, 4), scalar("zero_points", 1, 4), scalar("block_size", 2, 4)}}
	tQuant = &fbverify.Table{Name: "QuantizationParameters", Fields: []fbverify.Field{
		scalars("min", 0, 4), scalars("max", 1, 4), scalars("scale", 2, 4), scalars("zero_point", 3, 8),
		union("details", 4, map[int]*fbverify.Table{tagCustomQuantization: tCustomQuant, tagBlockwiseQuantization: tBlockwise}),
		scalar("quantized_dimension", 6, 4)}}

	tInt32Vec  = &fbverify.Table{Name: "Int32Vector", Fields: []fbverify.Field{scalars("values", 0, 4)}}
	tUint16Vec = &fbverify.Table{Name: "Uint16Vector", Fields: []fbverify.Field{scalars("values", 0, 2)}}
	tUint8Vec  = &fbverify.Table{Name: "Uint8Vector", Fields: []fbverify.Field{scalars("values", 0, 1)}}
	indexVecs  = map[int]*fbverify.Table{tagInt32Vector: tInt32Vec, tagUint16Vector: tUint16Vec, tagUint8Vector: tUint8Vec}
	tDimMeta   = &fbverify.Table{Name: "DimensionMetadata", Fields: []fbverify.Field{
		scalar("format", 0, 1), scalar("dense_size", 1, 4),
		union("array_segments", 2, indexVecs), union("array_indices", 4, indexVecs)}}
	tSparsity = &fbverify.Table{Name: "SparsityParameters", Fields: []fbverify.Field{
		scalars("traversal_order", 0, 4), scalars("block_map", 1, 4), tables("dim_metadata", 2, tDimMeta)}}

	tTensor = &fbverify.Table{Name: "Tensor", Fields: []fbverify.Field{
		scalars("shape", 0, 4), scalar("type", 1, 1), scalar("buffer", 2, 4), str("name", 3),
		tableRef("quantization", 4, tQuant), scalar("is_variable", 5, 1), tableRef("sparsity", 6, tSparsity),
		scalars("shape_signature", 7, 4), scalar("has_rank", 8, 1), scalar("external_buffer", 10, 4)}}

	tCallOptions     = &fbverify.Table{Name: "CallOptions", Fields: []fbverify.Field{scalar("subgraph", 0, 4)}}
	tIfOptions       = &fbverify.Table{Name: "IfOptions", Fields: []fbverify.Field{scalar("then_subgraph_index", 0, 4), scalar("else_subgraph_index", 1, 4)}}
	tWhileOptions    = &fbverify.Table{Name: "WhileOptions", Fields: []fbverify.Field{scalar("cond_subgraph_index", 0, 4), scalar("body_subgraph_index", 1, 4)}}
	tCallOnceOptions = &fbverify.Table{Name: "CallOnceOptions", Fields: []fbverify.Field{scalar("init_subgraph_index", 0, 4)}}
	tComposite       = &fbverify.Table{Name: "StableHLOCompositeOptions", Fields: []fbverify.Field{str("name", 0), scalar("decomposition_subgraph_index", 1, 4)}}

	tOperator = &fbverify.Table{Name: "Operator", Fields: []fbverify.Field{
		scalar("opcode_index", 0, 4), scalars("inputs", 1, 4), scalars("outputs", 2, 4),
		union("builtin_options", 3, map[int]*fbverify.Table{tagCallOptions: tCallOptions, tagIfOptions: tIfOptions,
			tagWhileOptions: tWhileOptions, tagCallOnceOptions: tCallOnceOptions}),
		union("builtin_options_2", 11, map[int]*fbverify.Table{tagStableHLOCompositeOptions: tComposite})}}

	tSubGraph = &fbverify.Table{Name: "SubGraph", Fields: []fbverify.Field{
		tables("tensors", 0, tTensor), scalars("inputs", 1, 4), scalars("outputs", 2, 4),
		tables("operators", 3, tOperator), str("name", 4)}}

	tOperatorCode = &fbverify.Table{Name: "OperatorCode", Fields: []fbverify.Field{
		scalar("deprecated_builtin_code", 0, 1), str("custom_code", 1), scalar("version", 2, 4), scalar("builtin_code", 3, 4)}}
	tBuffer = &fbverify.Table{Name: "Buffer", Fields: []fbverify.Field{
		scalars("data", 0, 1), scalar("offset", 1, 8), scalar("size", 2, 8)}}
	tMetadata  = &fbverify.Table{Name: "Metadata", Fields: []fbverify.Field{str("name", 0), scalar("buffer", 1, 4)}}
	tTensorMap = &fbverify.Table{Name: "TensorMap", Fields: []fbverify.Field{str("name", 0), scalar("tensor_index", 1, 4)}}
	tSignature = &fbverify.Table{Name: "SignatureDef", Fields: []fbverify.Field{
		tables("inputs", 0, tTensorMap), tables("outputs", 1, tTensorMap), str("signature_key", 2), scalar("subgraph_index", 4, 4)}}
	tExtGroup  = &fbverify.Table{Name: "ExternalBufferGroup", Fields: []fbverify.Field{str("name", 0)}}
	tExtBuffer = &fbverify.Table{Name: "ExternalBuffer", Fields: []fbverify.Field{
		scalar("id", 0, 4), scalar("group", 1, 4), scalar("offset", 2, 8), scalar("length", 3, 8), str("packing", 4)}}

	tModel = &fbverify.Table{Name: "Model", Fields: []fbverify.Field{
		scalar("version", 0, 4), tables("operator_codes", 1, tOperatorCode), tables("subgraphs", 2, tSubGraph),
		str("description", 3), tables("buffers", 4, tBuffer), tables("metadata", 6, tMetadata),
		tables("signature_defs", 7, tSignature), tables("external_buffer_groups", 8, tExtGroup),
		tables("external_buffers", 9, tExtBuffer)}}
)

// firstRegion is the length of the FlatBuffer region verified first.
// The FlatBuffer has no length of its own: it starts at byte 0 and may be
// followed by appended buffers or a zip archive. A region that does not
// hold every object is verified again four times longer, up to the whole
// file or the 2 GiB FlatBuffer limit, so that a large-model file with a
// small FlatBuffer (the only kind that exceeds 2 GiB) is viewed only as far
// as its tables go (in windowed mode, on 32-bit systems, that matters).
const firstRegion = 4 << 20

// Verify views the FlatBuffer region of mf and verifies every table,
// vector and string the reader reaches. It returns the region.
func verify(mf *mmapfile.File) ([]byte, error) {
	size := mf.Len()
	if size < 8 {
		return nil, format.Wrapf(format.ErrTruncated, formatName, "", 0,
			"file of %d bytes is shorter than the 8-byte FlatBuffer prefix (root offset and %q)", size, Identifier)
	}
	var id [8]byte
	if _, err := mf.ReadAt(id[:], 0); err != nil {
		return nil, format.Wrapf(format.ErrTruncated, formatName, "", 0, "reading the FlatBuffer prefix: %v", err)
	}
	if string(id[4:8]) != Identifier {
		return nil, format.Wrapf(format.ErrUnknownFormat, formatName, "file_identifier", 4,
			"identifier %q, want %q", id[4:8], Identifier)
	}
	limit := min(size, int64(fbverify.MaxSize))
	for n := min(limit, firstRegion); ; n = min(limit, 4*n) {
		fb, err := mf.View(0, n)
		if err != nil {
			return nil, format.Wrapf(format.ErrTruncated, formatName, "", 0, "viewing the FlatBuffer region [0, %d): %v", n, err)
		}
		err = fbverify.Verify(fb, tModel, fbverify.Options{
			Format: formatName,
			// An object of a tree-shaped buffer takes 8 bytes or more (4 of
			// its own and a 4-byte reference; a little less where writers
			// share vectors): the bound keeps what shared tables can make
			// the reader build in proportion to the file.
			MaxObjects:   len(fb)/6 + 1024,
			CacheVTables: true,
		})
		if err == nil || n == limit {
			return fb, err
		}
	}
}

// inRange checks an index read from the file against a count.
func inRange(field string, off int64, i, n int64, what string) error {
	if outOf(i, n) {
		return rangeErr(field, off, i, n, what)
	}
	return nil
}

// outOf reports whether index i is outside [0, n).
func outOf(i, n int64) bool { return i < 0 || i >= n }

// rangeErr reports index i outside [0, n).
func rangeErr(field string, off int64, i, n int64, what string) error {
	return format.Errorf(formatName, field, off, "%s index %d out of range (want 0 <= index < %d)", what, i, n)
}

// fileRange checks that [off, off+n) lies inside a file of size bytes
// (off and n as unsigned 64-bit values from the file).
func fileRange(field string, at int64, off, n uint64, size int64) error {
	if n > uint64(size) || off > uint64(size)-n {
		return format.Wrapf(format.ErrTruncated, formatName, field, at,
			"bytes [%d, +%d) run past the end of the %d-byte file", off, n, size)
	}
	return nil
}

// le is the byte order of every FlatBuffer.
var le = binary.LittleEndian
