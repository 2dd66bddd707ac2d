package pte

import (
	"slices"

	"github.com/edgeload/edgeload/loader/internal/fbverify"
)

// The fbverify descriptor of the Program schema (loader/internal/schema/program.fbs,
// FORMATS.md §1). It describes every field this package reads through the
// generated ptefb accessors, and nothing else: fields it omits (chain stack
// traces, non_const_buffer_device) are never read, so they need no
// verification. Field ids are the schema's declaration order; a union takes
// its tag's id and the next one.

// Scalar and vector element sizes.
const (
	sz1 = 1
	sz4 = 4
	sz8 = 8
)

var (
	descNull   = &fbverify.Table{Name: "Null"}
	descInt    = &fbverify.Table{Name: "Int", Fields: []fbverify.Field{{Name: "int_val", ID: 0, Kind: fbverify.Scalar, Size: sz8}}}
	descBool   = &fbverify.Table{Name: "Bool", Fields: []fbverify.Field{{Name: "bool_val", ID: 0, Kind: fbverify.Scalar, Size: sz1}}}
	descDouble = &fbverify.Table{Name: "Double", Fields: []fbverify.Field{{Name: "double_val", ID: 0, Kind: fbverify.Scalar, Size: sz8}}}
	descString = &fbverify.Table{Name: "String", Fields: []fbverify.Field{{Name: "string_val", ID: 0, Kind: fbverify.String}}}

	descIntList    = &fbverify.Table{Name: "IntList", Fields: []fbverify.Field{{Name: "items", ID: 0, Kind: fbverify.ScalarVector, Size: sz8}}}
	descDoubleList = &fbverify.Table{Name: "DoubleList", Fields: []fbverify.Field{{Name: "items", ID: 0, Kind: fbverify.ScalarVector, Size: sz8}}}
	descBoolList   = &fbverify.Table{Name: "BoolList", Fields: []fbverify.Field{{Name: "items", ID: 0, Kind: fbverify.ScalarVector, Size: sz1}}}
	descTensorList = &fbverify.Table{Name: "TensorList", Fields: []fbverify.Field{{Name: "items", ID: 0, Kind: fbverify.ScalarVector, Size: sz4}}}
	descOptList    = &fbverify.Table{Name: "OptionalTensorList", Fields: []fbverify.Field{{Name: "items", ID: 0, Kind: fbverify.ScalarVector, Size: sz4}}}

	descAllocationDetails = &fbverify.Table{Name: "AllocationDetails", Fields: []fbverify.Field{
		{Name: "memory_id", ID: 0, Kind: fbverify.Scalar, Size: sz4},
		{Name: "memory_offset_low", ID: 1, Kind: fbverify.Scalar, Size: sz4},
		{Name: "memory_offset_high", ID: 2, Kind: fbverify.Scalar, Size: sz4},
	}}

	descExtraTensorInfo = &fbverify.Table{Name: "ExtraTensorInfo", Fields: []fbverify.Field{
		{Name: "mutable_data_segments_idx", ID: 0, Kind: fbverify.Scalar, Size: sz8},
		{Name: "fully_qualified_name", ID: 1, Kind: fbverify.String},
		{Name: "location", ID: 2, Kind: fbverify.Scalar, Size: sz1},
		{Name: "device_type", ID: 3, Kind: fbverify.Scalar, Size: sz1},
		{Name: "device_index", ID: 4, Kind: fbverify.Scalar, Size: sz1},
	}}

	descTensor = &fbverify.Table{Name: "Tensor", Fields: []fbverify.Field{
		{Name: "scalar_type", ID: 0, Kind: fbverify.Scalar, Size: sz1},
		{Name: "storage_offset", ID: 1, Kind: fbverify.Scalar, Size: sz4},
		{Name: "sizes", ID: 2, Kind: fbverify.ScalarVector, Size: sz4},
		{Name: "dim_order", ID: 3, Kind: fbverify.ScalarVector, Size: sz1},
		{Name: "requires_grad", ID: 4, Kind: fbverify.Scalar, Size: sz1},
		{Name: "data_buffer_idx", ID: 5, Kind: fbverify.Scalar, Size: sz4},
		{Name: "allocation_info", ID: 6, Kind: fbverify.TableRef, Table: descAllocationDetails},
		{Name: "layout", ID: 7, Kind: fbverify.Scalar, Size: sz1},
		{Name: "shape_dynamism", ID: 8, Kind: fbverify.Scalar, Size: sz1},
		{Name: "extra_tensor_info", ID: 9, Kind: fbverify.TableRef, Table: descExtraTensorInfo},
	}}

	// descEValue: union KernelTypes; index = tag.
	descEValue = &fbverify.Table{Name: "EValue", Fields: []fbverify.Field{
		{Name: "val", ID: 0, Kind: fbverify.Union, Union: []*fbverify.Table{
			nil, descNull, descInt, descBool, descDouble, descTensor, descString,
			descIntList, descDoubleList, descBoolList, descTensorList, descOptList,
		}},
	}}

	descOperator = &fbverify.Table{Name: "Operator", Fields: []fbverify.Field{
		{Name: "name", ID: 0, Kind: fbverify.String},
		{Name: "overload", ID: 1, Kind: fbverify.String},
	}}

	descKernelCall = &fbverify.Table{Name: "KernelCall", Fields: []fbverify.Field{
		{Name: "op_index", ID: 0, Kind: fbverify.Scalar, Size: sz4},
		{Name: "args", ID: 1, Kind: fbverify.ScalarVector, Size: sz4},
	}}
	descDelegateCall = &fbverify.Table{Name: "DelegateCall", Fields: []fbverify.Field{
		{Name: "delegate_index", ID: 0, Kind: fbverify.Scalar, Size: sz4},
		{Name: "args", ID: 1, Kind: fbverify.ScalarVector, Size: sz4},
	}}
	descMoveCall = &fbverify.Table{Name: "MoveCall", Fields: []fbverify.Field{
		{Name: "move_from", ID: 0, Kind: fbverify.Scalar, Size: sz4},
		{Name: "move_to", ID: 1, Kind: fbverify.Scalar, Size: sz4},
	}}
	descJumpFalseCall = &fbverify.Table{Name: "JumpFalseCall", Fields: []fbverify.Field{
		{Name: "cond_value_index", ID: 0, Kind: fbverify.Scalar, Size: sz4},
		{Name: "destination_instruction", ID: 1, Kind: fbverify.Scalar, Size: sz4},
	}}
	descFreeCall = &fbverify.Table{Name: "FreeCall", Fields: []fbverify.Field{
		{Name: "value_index", ID: 0, Kind: fbverify.Scalar, Size: sz4},
	}}

	// descInstruction: union InstructionArguments; index = tag.
	descInstruction = &fbverify.Table{Name: "Instruction", Fields: []fbverify.Field{
		{Name: "instr_args", ID: 0, Kind: fbverify.Union, Union: []*fbverify.Table{
			nil, descKernelCall, descDelegateCall, descMoveCall, descJumpFalseCall, descFreeCall,
		}},
	}}

	descChain = &fbverify.Table{Name: "Chain", Fields: []fbverify.Field{
		{Name: "inputs", ID: 0, Kind: fbverify.ScalarVector, Size: sz4},
		{Name: "outputs", ID: 1, Kind: fbverify.ScalarVector, Size: sz4},
		{Name: "instructions", ID: 2, Kind: fbverify.TableVector, Table: descInstruction},
	}}

	descContainerMetadata = &fbverify.Table{Name: "ContainerMetadata", Fields: []fbverify.Field{
		{Name: "encoded_inp_str", ID: 0, Kind: fbverify.String},
		{Name: "encoded_out_str", ID: 1, Kind: fbverify.String},
	}}

	descCompileSpec = &fbverify.Table{Name: "CompileSpec", Fields: []fbverify.Field{
		{Name: "key", ID: 0, Kind: fbverify.String},
		{Name: "value", ID: 1, Kind: fbverify.ScalarVector, Size: sz1},
	}}

	descDelegateDataRef = &fbverify.Table{Name: "BackendDelegateDataReference", Fields: []fbverify.Field{
		{Name: "location", ID: 0, Kind: fbverify.Scalar, Size: sz1},
		{Name: "index", ID: 1, Kind: fbverify.Scalar, Size: sz4},
	}}

	descBackendDelegate = &fbverify.Table{Name: "BackendDelegate", Fields: []fbverify.Field{
		{Name: "id", ID: 0, Kind: fbverify.String},
		{Name: "processed", ID: 1, Kind: fbverify.TableRef, Table: descDelegateDataRef},
		{Name: "compile_specs", ID: 2, Kind: fbverify.TableVector, Table: descCompileSpec},
	}}

	descExecutionPlan = &fbverify.Table{Name: "ExecutionPlan", Fields: []fbverify.Field{
		{Name: "name", ID: 0, Kind: fbverify.String},
		{Name: "container_meta_type", ID: 1, Kind: fbverify.TableRef, Table: descContainerMetadata},
		{Name: "values", ID: 2, Kind: fbverify.TableVector, Table: descEValue},
		{Name: "inputs", ID: 3, Kind: fbverify.ScalarVector, Size: sz4},
		{Name: "outputs", ID: 4, Kind: fbverify.ScalarVector, Size: sz4},
		{Name: "chains", ID: 5, Kind: fbverify.TableVector, Table: descChain},
		{Name: "operators", ID: 6, Kind: fbverify.TableVector, Table: descOperator},
		{Name: "delegates", ID: 7, Kind: fbverify.TableVector, Table: descBackendDelegate},
		{Name: "non_const_buffer_sizes", ID: 8, Kind: fbverify.ScalarVector, Size: sz8},
	}}

	descBuffer = &fbverify.Table{Name: "Buffer", Fields: []fbverify.Field{
		{Name: "storage", ID: 0, Kind: fbverify.ScalarVector, Size: sz1},
	}}
	descInlineData = &fbverify.Table{Name: "BackendDelegateInlineData", Fields: []fbverify.Field{
		{Name: "data", ID: 0, Kind: fbverify.ScalarVector, Size: sz1},
	}}
	descDataSegment = &fbverify.Table{Name: "DataSegment", Fields: []fbverify.Field{
		{Name: "offset", ID: 0, Kind: fbverify.Scalar, Size: sz8},
		{Name: "size", ID: 1, Kind: fbverify.Scalar, Size: sz8},
	}}
	descSubsegmentOffsets = &fbverify.Table{Name: "SubsegmentOffsets", Fields: []fbverify.Field{
		{Name: "segment_index", ID: 0, Kind: fbverify.Scalar, Size: sz4},
		{Name: "offsets", ID: 1, Kind: fbverify.ScalarVector, Size: sz8},
	}}
	descNamedData = &fbverify.Table{Name: "NamedData", Fields: []fbverify.Field{
		{Name: "key", ID: 0, Kind: fbverify.String},
		{Name: "segment_index", ID: 1, Kind: fbverify.Scalar, Size: sz4},
	}}

	// descProgram is the root.
	descProgram = &fbverify.Table{Name: "Program", Fields: []fbverify.Field{
		{Name: "version", ID: 0, Kind: fbverify.Scalar, Size: sz4},
		{Name: "execution_plan", ID: 1, Kind: fbverify.TableVector, Table: descExecutionPlan},
		{Name: "constant_buffer", ID: 2, Kind: fbverify.TableVector, Table: descBuffer},
		{Name: "backend_delegate_data", ID: 3, Kind: fbverify.TableVector, Table: descInlineData},
		{Name: "segments", ID: 4, Kind: fbverify.TableVector, Table: descDataSegment},
		{Name: "constant_segment", ID: 5, Kind: fbverify.TableRef, Table: descSubsegmentOffsets},
		{Name: "mutable_data_segments", ID: 6, Kind: fbverify.TableVector, Table: descSubsegmentOffsets},
		{Name: "named_data", ID: 7, Kind: fbverify.TableVector, Table: descNamedData},
	}}

	// descProgramOpen is descProgram with the chains' instructions
	// Deferred: Open verifies the vectors, each method's first check
	// (Method.check) their instructions.
	descProgramOpen = deferInstructions(descProgram)

	// descProgramVersion verifies only what the version gate reads, so that
	// a program of a newer schema generation is reported as a version
	// problem rather than as a malformed file.
	descProgramVersion = &fbverify.Table{Name: "Program", Fields: []fbverify.Field{
		{Name: "version", ID: 0, Kind: fbverify.Scalar, Size: sz4},
	}}
)

// deferInstructions returns a copy of the Program descriptor whose
// Chain.instructions vectors are Deferred.
func deferInstructions(prog *fbverify.Table) *fbverify.Table {
	chain := *descChain
	chain.Fields = slices.Clone(chain.Fields)
	for i := range chain.Fields {
		if chain.Fields[i].Name == "instructions" {
			chain.Fields[i].Deferred = true
		}
	}
	plan := *descExecutionPlan
	plan.Fields = slices.Clone(plan.Fields)
	for i := range plan.Fields {
		if plan.Fields[i].Name == "chains" {
			plan.Fields[i].Table = &chain
		}
	}
	root := *prog
	root.Fields = slices.Clone(root.Fields)
	for i := range root.Fields {
		if root.Fields[i].Name == "execution_plan" {
			root.Fields[i].Table = &plan
		}
	}
	return &root
}
