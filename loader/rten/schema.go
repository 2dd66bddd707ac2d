package rten

import (
	"strconv"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/rtenattr"
	"github.com/edgeload/edgeload/internal/schema/rtenfb"
)

// The fbverify description of internal/schema/rten.fbs: every table,
// vector, string and union the loader reads through the generated
// accessors. Field ids are declaration positions; a union takes two.
//
// OperatorAttrs is append-only upstream, so unknown attribute tags are
// accepted (verified only as tables). Every field of the known attribute
// tables is described, so that a reader of every field (the object API's
// UnPack, repack's V1 to V2 rewrite) is safe on a verified buffer; IfAttrs
// and LoopAttrs hold subgraphs.
var (
	vModel    = &fbverify.Table{Name: "Model"}
	vGraph    = &fbverify.Table{Name: "Graph"}
	vNode     = &fbverify.Table{Name: "Node"}
	vOperator = &fbverify.Table{Name: "OperatorNode"}
	vConstant = &fbverify.Table{Name: "ConstantNode"}
	vValue    = &fbverify.Table{Name: "ValueNode"}
	vDim      = &fbverify.Table{Name: "Dim"}
	vMetadata = &fbverify.Table{Name: "Metadata"}
	vIfAttrs  = &fbverify.Table{Name: "IfAttrs"}
	vLoop     = &fbverify.Table{Name: "LoopAttrs"}
)

// Field ids (vtable slot k sits at byte 4+2k of the vtable).
const (
	idModelSchemaVersion = 0
	idModelGraph         = 1
	idModelMetadata      = 2

	idGraphNodes    = 0
	idGraphInputs   = 1
	idGraphOutputs  = 2
	idGraphCaptures = 3

	idNodeName = 0
	idNodeData = 1 // union: tag 1, value 2

	idOpType    = 0
	idOpAttrs   = 1 // union: tag 1, value 2
	idOpInputs  = 3
	idOpOutputs = 4

	idConstShape      = 0
	idConstData       = 1 // union: tag 1, value 2
	idConstDType      = 3
	idConstDataOffset = 4

	idValueShape = 0
	idValueDType = 1

	idDimValue = 0
	idDimName  = 1

	idIfThen = 0
	idIfElse = 1
	idLoop   = 0

	idDataData = 0 // FloatData/Int32Data/Int8Data/UInt8Data.data
)

func inlineData(name string, size int) *fbverify.Table {
	return &fbverify.Table{Name: name, Fields: []fbverify.Field{
		{Name: "data", ID: idDataData, Kind: fbverify.ScalarVector, Size: size, Required: true},
	}}
}

func init() {
	vModel.Fields = []fbverify.Field{
		{Name: "schema_version", ID: idModelSchemaVersion, Kind: fbverify.Scalar, Size: 4},
		{Name: "graph", ID: idModelGraph, Kind: fbverify.TableRef, Table: vGraph, Required: true},
		{Name: "metadata", ID: idModelMetadata, Kind: fbverify.TableRef, Table: vMetadata},
	}
	vGraph.Fields = []fbverify.Field{
		{Name: "nodes", ID: idGraphNodes, Kind: fbverify.TableVector, Table: vNode},
		{Name: "inputs", ID: idGraphInputs, Kind: fbverify.ScalarVector, Size: 4},
		{Name: "outputs", ID: idGraphOutputs, Kind: fbverify.ScalarVector, Size: 4},
		{Name: "captures", ID: idGraphCaptures, Kind: fbverify.ScalarVector, Size: 4},
	}
	kinds := make([]*fbverify.Table, int(rtenfb.NodeKindValueNode)+1)
	kinds[rtenfb.NodeKindOperatorNode] = vOperator
	kinds[rtenfb.NodeKindConstantNode] = vConstant
	kinds[rtenfb.NodeKindValueNode] = vValue
	vNode.Fields = []fbverify.Field{
		{Name: "name", ID: idNodeName, Kind: fbverify.String},
		{Name: "data", ID: idNodeData, Kind: fbverify.Union, Union: kinds},
	}

	// Every known OperatorAttrs member, by tag, with its fields.
	attrs := make([]*fbverify.Table, len(rtenfb.EnumNamesOperatorAttrs))
	for tag, name := range rtenfb.EnumNamesOperatorAttrs {
		if tag != rtenfb.OperatorAttrsNONE && int(tag) < len(attrs) {
			attrs[tag] = &fbverify.Table{Name: name, Fields: attrFields(rtenattr.Fields[tag])}
		}
	}
	vIfAttrs.Fields = []fbverify.Field{
		{Name: "then_branch", ID: idIfThen, Kind: fbverify.TableRef, Table: vGraph},
		{Name: "else_branch", ID: idIfElse, Kind: fbverify.TableRef, Table: vGraph},
	}
	vLoop.Fields = []fbverify.Field{
		{Name: "body", ID: idLoop, Kind: fbverify.TableRef, Table: vGraph},
	}
	attrs[rtenfb.OperatorAttrsIfAttrs] = vIfAttrs
	attrs[rtenfb.OperatorAttrsLoopAttrs] = vLoop
	vOperator.Fields = []fbverify.Field{
		{Name: "type", ID: idOpType, Kind: fbverify.Scalar, Size: 1},
		{Name: "attrs", ID: idOpAttrs, Kind: fbverify.Union, Union: attrs, AllowUnknown: true},
		{Name: "inputs", ID: idOpInputs, Kind: fbverify.ScalarVector, Size: 4},
		{Name: "outputs", ID: idOpOutputs, Kind: fbverify.ScalarVector, Size: 4},
	}

	data := make([]*fbverify.Table, int(rtenfb.ConstantDataUInt8Data)+1)
	data[rtenfb.ConstantDataFloatData] = inlineData("FloatData", 4)
	data[rtenfb.ConstantDataInt32Data] = inlineData("Int32Data", 4)
	data[rtenfb.ConstantDataInt8Data] = inlineData("Int8Data", 1)
	data[rtenfb.ConstantDataUInt8Data] = inlineData("UInt8Data", 1)
	vConstant.Fields = []fbverify.Field{
		{Name: "shape", ID: idConstShape, Kind: fbverify.ScalarVector, Size: 4, Required: true},
		{Name: "data", ID: idConstData, Kind: fbverify.Union, Union: data},
		{Name: "dtype", ID: idConstDType, Kind: fbverify.Scalar, Size: 2},
		{Name: "data_offset", ID: idConstDataOffset, Kind: fbverify.Scalar, Size: 8},
	}

	vValue.Fields = []fbverify.Field{
		{Name: "shape", ID: idValueShape, Kind: fbverify.TableVector, Table: vDim},
		{Name: "dtype", ID: idValueDType, Kind: fbverify.Scalar, Size: 1},
	}
	vDim.Fields = []fbverify.Field{
		{Name: "value", ID: idDimValue, Kind: fbverify.Scalar, Size: 4},
		{Name: "name", ID: idDimName, Kind: fbverify.String},
	}

	names := []string{"onnx_hash", "description", "license", "commit",
		"code_repository", "model_repository", "run_id", "run_url"}
	for i, n := range names {
		vMetadata.Fields = append(vMetadata.Fields,
			fbverify.Field{Name: n, ID: i, Kind: fbverify.String})
	}
}

// vScalar is the Scalar union: IntScalar and FloatScalar, each one 4-byte
// value.
var vScalar = []*fbverify.Table{
	rtenfb.ScalarIntScalar:   {Name: "IntScalar", Fields: []fbverify.Field{{Name: "value", ID: 0, Kind: fbverify.Scalar, Size: 4}}},
	rtenfb.ScalarFloatScalar: {Name: "FloatScalar", Fields: []fbverify.Field{{Name: "value", ID: 0, Kind: fbverify.Scalar, Size: 4}}},
}

// attrFields turns an rtenattr.Fields entry into fbverify fields.
func attrFields(spec []string) []fbverify.Field {
	var fs []fbverify.Field
	id := 0
	for _, k := range spec {
		f := fbverify.Field{Name: "field " + strconv.Itoa(id), ID: id}
		switch k {
		case "1":
			f.Kind, f.Size = fbverify.Scalar, 1
		case "4":
			f.Kind, f.Size = fbverify.Scalar, 4
		case "[4]":
			f.Kind, f.Size = fbverify.ScalarVector, 4
		case "s":
			f.Kind = fbverify.String
		case "u":
			f.Kind, f.Union = fbverify.Union, vScalar
			id++
		case "g":
			f.Kind, f.Table = fbverify.TableRef, vGraph
		}
		fs = append(fs, f)
		id++
	}
	return fs
}
