package repack

import (
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/ptefb"
)

// The object API's UnPack copies every table and vector it reaches, once per
// reference. A verified FlatBuffer has at most one object per 2 bytes, but a
// hostile one can point many tables at one large vector, and its unpacked
// copy would then be out of all proportion to the file. unpackCost walks the
// program the way UnPack does, without allocating, and adds up what UnPack
// would allocate, so that such a buffer is refused first.

// objCost is what one unpacked table costs beside its vectors and strings.
const objCost = 64

// maxUnpack is the most unpacking a FlatBuffer of n bytes may cost.
func maxUnpack(n int) int64 { return 32*int64(n) + 64<<20 }

// programCost returns what unpacking the program root would allocate, or
// stops early (returning more than limit) once it is past limit.
func programCost(root *ptefb.Program, limit int64) int64 {
	var c int64
	var plan ptefb.ExecutionPlan
	var ev ptefb.EValue
	var chain ptefb.Chain
	var in ptefb.Instruction
	var fl ptefb.FrameList
	var fr ptefb.Frame
	var op ptefb.Operator
	var d ptefb.BackendDelegate
	var cs ptefb.CompileSpec
	var tab flatbuffers.Table
	for i := range root.ExecutionPlanLength() {
		root.ExecutionPlan(&plan, i)
		c += objCost + int64(len(plan.Name())) + 4*int64(plan.InputsLength()+plan.OutputsLength()) +
			8*int64(plan.NonConstBufferSizesLength()) + objCost*int64(plan.NonConstBufferDeviceLength())
		if m := plan.ContainerMetaType(nil); m != nil {
			c += objCost + int64(len(m.EncodedInpStr())+len(m.EncodedOutStr()))
		}
		for j := range plan.ValuesLength() {
			plan.Values(&ev, j)
			c += 2 * objCost
			if !ev.Val(&tab) {
				continue
			}
			switch ev.ValType() {
			case ptefb.KernelTypesTensor:
				var t ptefb.Tensor
				t.Init(tab.Bytes, tab.Pos)
				c += 2*objCost + 4*int64(t.SizesLength()) + int64(t.DimOrderLength())
				if x := t.ExtraTensorInfo(nil); x != nil {
					c += objCost + int64(len(x.FullyQualifiedName()))
				}
			case ptefb.KernelTypesString:
				var s ptefb.String
				s.Init(tab.Bytes, tab.Pos)
				c += objCost + int64(len(s.StringVal()))
			case ptefb.KernelTypesIntList, ptefb.KernelTypesDoubleList:
				var l ptefb.IntList
				l.Init(tab.Bytes, tab.Pos)
				c += objCost + 8*int64(l.ItemsLength())
			case ptefb.KernelTypesBoolList:
				var l ptefb.BoolList
				l.Init(tab.Bytes, tab.Pos)
				c += objCost + int64(l.ItemsLength())
			case ptefb.KernelTypesTensorList, ptefb.KernelTypesOptionalTensorList:
				var l ptefb.TensorList
				l.Init(tab.Bytes, tab.Pos)
				c += objCost + 4*int64(l.ItemsLength())
			default:
				c += objCost
			}
			if c > limit {
				return c
			}
		}
		for j := range plan.ChainsLength() {
			plan.Chains(&chain, j)
			c += objCost + 4*int64(chain.InputsLength()+chain.OutputsLength())
			for k := range chain.InstructionsLength() {
				chain.Instructions(&in, k)
				c += 2 * objCost
				if in.InstrArgs(&tab) {
					switch in.InstrArgsType() {
					case ptefb.InstructionArgumentsKernelCall, ptefb.InstructionArgumentsDelegateCall:
						var kc ptefb.KernelCall
						kc.Init(tab.Bytes, tab.Pos)
						c += objCost + 4*int64(kc.ArgsLength())
					default:
						c += objCost
					}
				}
				if c > limit {
					return c
				}
			}
			for k := range chain.StacktraceLength() {
				chain.Stacktrace(&fl, k)
				c += objCost
				for f := range fl.ItemsLength() {
					fl.Items(&fr, f)
					c += objCost + int64(len(fr.Filename())+len(fr.Name())+len(fr.Context()))
				}
				if c > limit {
					return c
				}
			}
		}
		for j := range plan.OperatorsLength() {
			plan.Operators(&op, j)
			c += objCost + int64(len(op.Name())+len(op.Overload()))
		}
		for j := range plan.DelegatesLength() {
			plan.Delegates(&d, j)
			c += 2*objCost + int64(len(d.Id()))
			for k := range d.CompileSpecsLength() {
				d.CompileSpecs(&cs, k)
				c += objCost + int64(len(cs.Key())+cs.ValueLength())
			}
			if c > limit {
				return c
			}
		}
	}
	var buf ptefb.Buffer
	for i := range root.ConstantBufferLength() {
		root.ConstantBuffer(&buf, i)
		c += objCost + int64(buf.StorageLength())
		if c > limit {
			return c
		}
	}
	var bd ptefb.BackendDelegateInlineData
	for i := range root.BackendDelegateDataLength() {
		root.BackendDelegateData(&bd, i)
		c += objCost + int64(bd.DataLength())
		if c > limit {
			return c
		}
	}
	var so ptefb.SubsegmentOffsets
	for i := range root.MutableDataSegmentsLength() {
		root.MutableDataSegments(&so, i)
		c += objCost + 8*int64(so.OffsetsLength())
	}
	if cs := root.ConstantSegment(nil); cs != nil {
		c += objCost + 8*int64(cs.OffsetsLength())
	}
	var nd ptefb.NamedData
	for i := range root.NamedDataLength() {
		root.NamedData(&nd, i)
		c += objCost + int64(len(nd.Key()))
	}
	c += objCost * int64(root.SegmentsLength())
	return c
}

// checkProgramCost refuses a program whose unpacking would cost more than
// maxUnpack of its FlatBuffer's size.
func checkProgramCost(root *ptefb.Program, n int) error {
	limit := maxUnpack(n)
	var c int64
	if err := unpackSafe("Program", func() { c = programCost(root, limit) }); err != nil {
		return err
	}
	if c > limit {
		return fmt.Errorf("repack: Program: its tables share objects so much that unpacking %d bytes of FlatBuffer would take more than %d bytes", n, limit)
	}
	return nil
}
