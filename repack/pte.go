package repack

import (
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/segment"
)

// pteHeaderLen is the extended header written: the 32-byte "eh00" header
// with segment_data_size.
const pteHeaderLen = 32

// ExtraTensorInfo.location values.
const (
	locSegment  = 0
	locExternal = 1
)

// unpackProgram unpacks the verified program FlatBuffer fb (the region
// [0, program_size), headers included).
func unpackProgram(fb []byte) (*ptefb.ProgramT, error) {
	root := ptefb.GetRootAsProgram(fb, 0)
	var plan ptefb.ExecutionPlan
	var chain ptefb.Chain
	for i := range root.ExecutionPlanLength() {
		root.ExecutionPlan(&plan, i)
		ppos := tablePos(plan.Table())
		if pos := fbField(fb, ppos, 9); pos != 0 {
			if err := fbTableVector(fb, pos, func(int64) error { return nil }); err != nil {
				return nil, fmt.Errorf("repack: Program.execution_plan[%d].non_const_buffer_device: %v", i, err)
			}
		}
		for j := range plan.ChainsLength() {
			plan.Chains(&chain, j)
			pos := fbField(fb, tablePos(chain.Table()), 3)
			if pos == 0 {
				continue
			}
			// FrameList.items, each Frame's strings: filename, name, context.
			err := fbTableVector(fb, pos, func(list int64) error {
				if p := fbField(fb, list, 0); p != 0 {
					return fbTableVector(fb, p, func(frame int64) error {
						for _, id := range []int{0, 2, 3} {
							if p := fbField(fb, frame, id); p != 0 {
								if _, _, err := fbVector(fb, p, 1); err != nil {
									return err
								}
							}
						}
						return nil
					})
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("repack: Program.execution_plan[%d].chains[%d].stacktrace: %v", i, j, err)
			}
		}
	}
	if err := checkProgramCost(root, len(fb)); err != nil {
		return nil, err
	}
	var prog *ptefb.ProgramT
	err := unpackSafe("Program", func() { prog = root.UnPack() })
	return prog, err
}

func (r *run) pte(outs *outputs, out string, res *Result) error {
	p := r.m.Program()
	// A program whose own external tensors were not given their data
	// cannot be linked: its output is opened unlinked.
	_, unresolved := p.External()
	r.unlinked = unresolved > 0
	region, err := p.ProgramData().Bytes()
	if err != nil {
		return err
	}
	prog, err := unpackProgram(region)
	if err != nil {
		return err
	}
	segs := p.Segments()
	if len(segs) != len(prog.Segments) {
		return fmt.Errorf("%w: %d segment views for %d segments", errInternal, len(segs), len(prog.Segments))
	}
	plans, ext, err := r.planPTE(p, prog, segs)
	if err != nil {
		return err
	}
	dataSize := r.placeSegments(plans, prog)
	head, base, err := encodePTE(prog, len(region), len(plans) > 0, r.align, dataSize)
	if err != nil {
		return err
	}
	if ext != nil {
		n, err := r.writePTD(outs, r.opts.Externalize, ext)
		if err != nil {
			return err
		}
		res.DataSize = n
	}
	if err := r.writeSegments(outs, out, res, head, base, plans, dataSize); err != nil {
		return err
	}
	res.Tensors = p.NumTensors()
	return nil
}

// planPTE plans the program's segments: whole copies, none for the
// constant segment --externalize empties (its constants planned into the
// .ptd it returns), or sub-buffers placed on r.talign, their offsets in
// prog updated.
func (r *run) planPTE(p *pte.Program, prog *ptefb.ProgramT, segs []segment.Segment) ([]segPlan, *ptdOut, error) {
	// Which segments hold sub-buffers (constant and mutable segments), and
	// which are referenced by anything else.
	subs := make(map[int][]*ptefb.SubsegmentOffsetsT)
	var tables []*ptefb.SubsegmentOffsetsT
	if prog.ConstantSegment != nil {
		tables = append(tables, prog.ConstantSegment)
	}
	tables = append(tables, prog.MutableDataSegments...)
	for _, t := range tables {
		if t != nil && int(t.SegmentIndex) < len(segs) {
			subs[int(t.SegmentIndex)] = append(subs[int(t.SegmentIndex)], t)
		}
	}

	blobs := blobSegments(prog)
	var ext *ptdOut
	emptied := -1
	if r.opts.Externalize != "" {
		var err error
		ext, err = r.externalize(p, prog)
		if err != nil {
			return nil, nil, err
		}
		if cs := prog.ConstantSegment; cs != nil && int(cs.SegmentIndex) < len(segs) && len(subs[int(cs.SegmentIndex)]) == 1 && !blobs[int(cs.SegmentIndex)] && !isMutable(prog, int(cs.SegmentIndex)) {
			emptied = int(cs.SegmentIndex)
		}
	}

	var spans []span
	if r.talign > 0 && len(segs) > 0 {
		spans = tensorSpans(r.m, segs[0].File())
	}
	plans := make([]segPlan, len(segs))
	for i, s := range segs {
		switch {
		case i == emptied:
			// every constant moved to the .ptd
		case r.talign > 0 && len(subs[i]) > 0 && !blobs[i]:
			var offs []uint64
			for _, t := range subs[i] {
				offs = append(offs, t.Offsets...)
			}
			pieces, size, remap, err := relayout(s, offs, within(spans, s), r.talign)
			if err != nil {
				return nil, nil, err
			}
			plans[i] = segPlan{pieces: pieces, size: size}
			for _, t := range subs[i] {
				for k, o := range t.Offsets {
					t.Offsets[k] = remap[o]
				}
			}
		default:
			plans[i] = segPlan{pieces: []piece{{src: s}}, size: s.Len()}
		}
	}
	return plans, ext, nil
}

// placeSegments places each planned segment on r.align after the one
// before, records the places in prog, and returns the size of the
// segment data.
func (r *run) placeSegments(plans []segPlan, prog *ptefb.ProgramT) int64 {
	var cur int64
	for i := range plans {
		plans[i].off = alignUp(cur, r.align)
		cur = plans[i].off + plans[i].size
		prog.Segments[i].Offset = uint64(plans[i].off)
		prog.Segments[i].Size = uint64(plans[i].size)
		for _, pc := range plans[i].pieces {
			r.total += pc.src.Len()
		}
	}
	return cur
}

// encodePTE packs prog and puts the extended header before it: the
// program's first bytes, and where its segment data starts (on align, when
// it has segments).
func encodePTE(prog *ptefb.ProgramT, sizeHint int, hasSegments bool, align, dataSize int64) (head []byte, base int64, err error) {
	b := flatbuffers.NewBuilder(sizeHint + 4096)
	b.FinishWithFileIdentifier(prog.Pack(b), []byte(pte.Identifier))
	fb := b.FinishedBytes()
	if len(fb) < 8 {
		return nil, 0, fmt.Errorf("%w: program FlatBuffer of %d bytes", errInternal, len(fb))
	}
	head = format.HeaderRoom(fb, pteHeaderLen)
	progSize := int64(len(head))
	if hasSegments {
		base = alignUp(progSize, align)
	}
	pte.Header{Length: pteHeaderLen, ProgramSize: progSize, SegmentBase: base, SegmentDataSize: dataSize}.Put(head)
	return head, base, nil
}

// writeSegments writes head, then each planned segment's pieces at base +
// its offset, zeros between them.
func (r *run) writeSegments(outs *outputs, out string, res *Result, head []byte, base int64, plans []segPlan, dataSize int64) error {
	w, err := outs.create(out, "")
	if err != nil {
		return err
	}
	if err := w.write(head); err != nil {
		return err
	}
	for i := range plans {
		for _, pc := range plans[i].pieces {
			if err := w.padTo(base + plans[i].off + pc.dst); err != nil {
				return err
			}
			if err := w.copySeg(r, pc.src); err != nil {
				return err
			}
		}
	}
	if len(plans) > 0 {
		if err := w.padTo(base + dataSize); err != nil {
			return err
		}
	}
	res.Size = w.pos
	res.Segments = len(plans)
	return nil
}

// blobSegments returns the segments that are a delegate's blob or named
// data: their bytes are read whole, so they are copied as they are.
func blobSegments(prog *ptefb.ProgramT) map[int]bool {
	blobs := make(map[int]bool)
	for _, nd := range prog.NamedData {
		if nd != nil {
			blobs[int(nd.SegmentIndex)] = true
		}
	}
	for _, pl := range prog.ExecutionPlan {
		if pl == nil {
			continue
		}
		for _, d := range pl.Delegates {
			if d != nil && d.Processed != nil && d.Processed.Location == 1 {
				blobs[int(d.Processed.Index)] = true
			}
		}
	}
	return blobs
}

// isMutable reports whether segment i is a mutable data segment.
func isMutable(prog *ptefb.ProgramT, i int) bool {
	for _, t := range prog.MutableDataSegments {
		if t != nil && int(t.SegmentIndex) == i {
			return true
		}
	}
	return false
}

// Name returns the name Externalize stores a constant under: its
// fully-qualified name, or "<method>/values/<index>" (the name the loader
// gives a tensor without one) when it has none.
func Name(method string, value int, fqn string) string {
	if fqn != "" {
		return fqn
	}
	return fmt.Sprintf("%s/values/%d", method, value)
}
