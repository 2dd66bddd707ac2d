package pte

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"unsafe"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/arena"
	"github.com/edgeload/edgeload/loader/internal/fbread"
	"github.com/edgeload/edgeload/loader/internal/nameindex"
	"github.com/edgeload/edgeload/loader/internal/region"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// Wire values of enums the parser interprets.
const (
	locSegment  = 0 // TensorDataLocation SEGMENT
	locExternal = 1 // TensorDataLocation EXTERNAL

	// vtFirstField is the vtable offset (4 + 2*id) of field 0: the
	// storage and data vectors of Buffer and BackendDelegateInlineData.
	vtFirstField = 4
	// vtOffsets is the vtable offset of SubsegmentOffsets.offsets (id 1).
	vtOffsets = 4 + 2*1
	// vtExecutionPlan is the vtable offset of Program.execution_plan.
	vtExecutionPlan = 4 + 2*1
	// The [int] vectors of value indices: Chain.inputs (id 0) and outputs
	// (id 1), KernelCall.args and DelegateCall.args (id 1), TensorList.items
	// and OptionalTensorList.items (id 0). (ExecutionPlan's are read in
	// method, by id.)
	vtChainInputs, vtChainOutputs = 4 + 2*0, 4 + 2*1
	vtChainInstructions           = 4 + 2*2
	vtCallArgs                    = 4 + 2*1
	vtListItems                   = 4 + 2*0
)

// newProgram reads the headers and the FlatBuffer region of mf, verifies
// them and builds the program's indexes (named o.name, else mf.Name()).
func newProgram(mf *mmapfile.File, o options) (*Program, error) {
	if o.name == "" {
		o.name = mf.Name()
	}
	size := mf.Len()
	// The first bytes (package region), then the region the headers in
	// them describe, read into the same pooled buffer when small (only
	// what the first read did not cover), which goes back at Close.
	head, hbuf, err := region.Head(mf, o.head)
	if err != nil {
		return nil, err
	}
	hdr, err := parseHeader(head[:min(len(head), headerPeek)], size)
	if err != nil {
		region.Put(hbuf)
		return nil, err
	}
	fb, buf, err := region.Range(mf, head, hbuf, 0, hdr.ProgramSize)
	if err != nil {
		return nil, err
	}
	p, err := parseProgram(mf, o, hdr, fb, buf)
	if err != nil {
		region.Put(buf)
		return nil, err
	}
	return p, nil
}

// parseProgram verifies the FlatBuffer region fb and builds the program.
func parseProgram(mf *mmapfile.File, o options, hdr Header, fb []byte, buf *[]byte) (*Program, error) {
	vo := fbverify.Options{Format: formatName, MaxDepth: o.maxDepth, MaxObjects: o.maxObjects}
	// Everything but the chains' instructions (lazy in program.fbs),
	// which each method's first check verifies (Method.check) with the
	// same walk.
	p := &Program{mf: mf, name: o.name, hdr: hdr, version: 0, fb: fb, region: buf}
	walk := &p.walk
	walk.Reset(fb, vo)
	walk.SetLazy(true)
	verr := walk.Verify("Program", ptefb.VerifyProgram)
	if verr != nil {
		// A newer schema generation is a version problem, not a malformed
		// file: its version is read if the walk to it alone passes.
		if err := fbverify.NewWalk(fb, vo).Verify("Program", verifyVersion); err != nil {
			return nil, err
		}
	}
	var root ptefb.Program
	root.Init(fb, flatbuffers.GetUOffsetT(fb))
	if v := root.Version(); v != 0 {
		off := int64(-1)
		if t := root.Table(); t.Offset(4) != 0 {
			off = int64(t.Pos) + int64(t.Offset(4))
		}
		return nil, format.Wrapf(format.ErrUnsupportedVersion, formatName, "Program.version", off,
			"program schema version %d is newer than this loader reads (want 0)", v)
	}
	if verr != nil {
		return nil, verr
	}
	budget := 4*int64(len(fb)) + 1<<16
	if o.budget > 0 {
		budget = o.budget
	}
	b := &builder{p: p, root: root, fb: fb, size: int64(mf.Len()), budget: budget, noQuick: o.noQuick}
	if err := b.build(); err != nil {
		return nil, err
	}
	p.checks.walk, p.checks.budget = walk, b.budget
	if len(o.data) > 0 {
		if err := p.Link(o.data...); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// builder turns the verified FlatBuffer into the Program's tables and runs
// the semantic checks. Every field it reads is one the walk verified.
type builder struct {
	p    *Program
	root ptefb.Program
	fb   []byte
	size int64 // file size

	recs     []tensorRec // the tensors read so far (Program.recs once built)
	external int         // external tensors among recs
	dims     []int64     // scratch: a tensor's sizes

	// budget bounds the work (elements copied or checked) done on behalf
	// of the FlatBuffer, so that shared references cannot make the parse
	// quadratic: every element of a tree-shaped buffer is charged once,
	// and no tree of len(fb) bytes has more than len(fb) elements.
	budget int64

	constOffsets offsets // constant_segment.offsets (empty: legacy)
	mutOffsets   offsets
	// constOff and constLen are the constant segment's offset in the file
	// and length.
	constOff, constLen int64

	noQuick bool // options.noQuick
	// deferred is set for a method's check (Method.check), which checks
	// what Open leaves: tensors without data in the file, tensor lists.
	deferred bool
	// strs holds the named data's keys.
	strs arena.Strings
	// names are the names of the plans, while Open checks that none
	// repeats (Program.methodIdx does it for more than maxNameSet plans).
	names nameSet
	// The vtables of the tables a program repeats, decoded once each.
	planF, metaF, evalueF, tensorF, etiF, opF, chainF fbread.Fields
	quickF                                            tensorFields
}

func (b *builder) fail(field string, off int64, msg string, args ...any) error {
	return format.Errorf(formatName, field, off, msg, args...)
}

// spend spends n units of the work budget and reports whether any is left.
func (b *builder) spend(n int) bool {
	b.budget -= int64(n)
	return b.budget >= 0
}

// overBudget is the error of a field, at offset off (its table), that the
// work budget does not cover.
func (b *builder) overBudget(field string, off int64) error { return overBudget(b.p, field, off) }

// verifyVersion verifies the root table and its version field only.
func verifyVersion(w *fbverify.Walk, pos int64) error {
	t, err := w.Start(pos)
	if err != nil {
		return err
	}
	err = w.Scalar(&t, 0, 4)
	w.Leave()
	if err != nil {
		return w.At(err, "version", -1)
	}
	return nil
}

// vecPos returns the file position of the first element of the vector at
// field vtable offset vt in t, and its length; ok is false when absent.
func vecPos(t flatbuffers.Table, vt flatbuffers.VOffsetT) (pos int64, n int, ok bool) {
	o := flatbuffers.UOffsetT(t.Offset(vt))
	if o == 0 {
		return 0, 0, false
	}
	return int64(t.Vector(o)), t.VectorLen(o), true
}

func idx(name string, i int) string { return name + "[" + strconv.Itoa(i) + "]" }

func (b *builder) build() error {
	p, root := b.p, b.root
	if err := b.segments(); err != nil {
		return err
	}
	if err := b.constants(); err != nil {
		return err
	}
	if err := b.namedData(); err != nil {
		return err
	}
	start, n, _ := vecPos(root.Table(), vtExecutionPlan)
	p.plans, p.nmethods = start, n
	if n > maxNameSet {
		// The index finds a plan by name: the names in the FlatBuffer
		// while Open checks that none repeats, the Methods' own once they
		// are built (methods.go): lookups wait for them. (Fewer plans are
		// checked with the builder's nameSet, and indexed when built.)
		fb := b.fb
		var f fbread.Fields
		p.methodIdx = nameindex.Make(n, func(i int) string {
			if p.methods != nil {
				return p.methods[i].Name
			}
			pp := fbread.Deref(fb, start+4*int64(i))
			name := fbread.FieldBytes(fb, pp, f.Of(fb, pp)[planName], 1)
			return unsafe.String(unsafe.SliceData(name), len(name))
		})
	}
	p.inlineConsts = b.constOffsets.n == 0
	for i := range n {
		if err := b.checkMethod(i, fbread.Deref(b.fb, start+4*int64(i))); err != nil {
			return err
		}
	}
	p.recs, p.ntensors, p.external = b.recs, len(b.recs), b.external
	if cap(p.recs) > 2*len(p.recs)+64 {
		// Mostly activations: do not keep the room guessed for tensors.
		p.recs = slices.Clone(p.recs)
		putRecs(p.recBuf, nil)
		p.recBuf = nil
	}
	return nil
}

// segments checks every DataSegment against the header and the file and
// makes its view.
func (b *builder) segments() error {
	p, root := b.p, b.root
	n := root.SegmentsLength()
	if !b.spend(n) {
		return b.overBudget("Program.segments", int64(root.Table().Pos))
	}
	if n <= len(p.segArr) {
		p.segments = p.segArr[:n:n]
	} else {
		p.segments = make([]segment.Segment, n)
	}
	base := p.hdr.SegmentBase
	var ds ptefb.DataSegment
	for i := 0; i < n; i++ {
		root.Segments(&ds, i)
		pos := int64(ds.Table().Pos)
		off, sz := ds.Offset(), ds.Size()
		if off > math.MaxInt64 || sz > math.MaxInt64 {
			return b.fail(idx("Program.segments", i), pos, "segment offset %d / size %d overflows a 64-bit file offset", off, sz)
		}
		if sz > 0 && base == 0 {
			return b.fail(idx("Program.segments", i), pos, "segment of %d bytes, but the file declares no segment data (no extended header or segment_base_offset 0)", sz)
		}
		abs := base + int64(off)
		if int64(off) > math.MaxInt64-base || int64(sz) > math.MaxInt64-abs {
			return b.fail(idx("Program.segments", i), pos, "segment_base_offset %d + offset %d + size %d overflows", base, off, sz)
		}
		end := abs + int64(sz)
		if p.hdr.SegmentDataSizeKnown && base != 0 && end > base+p.hdr.SegmentDataSize {
			return b.fail(idx("Program.segments", i), pos, "segment [%d, %d) ends past the segment data the header declares (segment_base_offset %d + segment_data_size %d): want it to end by %d",
				abs, end, base, p.hdr.SegmentDataSize, base+p.hdr.SegmentDataSize)
		}
		if end > b.size {
			return format.Wrapf(format.ErrTruncated, formatName, idx("Program.segments", i), pos,
				"segment [%d, %d) ends past the end of the %d-byte file: file truncated", abs, end, b.size)
		}
		s, err := segment.New(p.mf, abs, int64(sz))
		if err != nil {
			return b.fail(idx("Program.segments", i), pos, "segment [%d, %d): %v", abs, end, err)
		}
		p.segments[i] = s
	}
	return nil
}

// constants resolves the constant segment (or the legacy constant_buffer)
// and the first mutable data segment.
func (b *builder) constants() error {
	p, root := b.p, b.root
	p.constSeg, p.mutSeg = -1, -1
	var cs ptefb.SubsegmentOffsets
	if root.ConstantSegment(&cs) != nil && cs.OffsetsLength() > 0 {
		pos := int64(cs.Table().Pos)
		if nb := root.ConstantBufferLength(); nb > 0 {
			return b.fail("Program.constant_buffer", -1,
				"constant_buffer has %d entries and constant_segment has %d offsets: only one may be used", nb, cs.OffsetsLength())
		}
		si := cs.SegmentIndex()
		if int64(si) >= int64(len(p.segments)) {
			return b.fail("Program.constant_segment.segment_index", pos,
				"segment_index %d out of range (the program has %d segments: want below %[2]d)", si, len(p.segments))
		}
		p.constSeg = int(si)
		b.constOff, b.constLen = p.segments[si].Offset(), p.segments[si].Len()
		b.constOffsets = b.offsets(&cs)
	} else {
		p.legacy = root.ConstantBufferLength() > 0
	}
	var ms ptefb.SubsegmentOffsets
	for i := 0; i < root.MutableDataSegmentsLength(); i++ {
		root.MutableDataSegments(&ms, i)
		field := idx("Program.mutable_data_segments", i)
		si := ms.SegmentIndex()
		if int64(si) >= int64(len(p.segments)) {
			return b.fail(field+".segment_index", int64(ms.Table().Pos),
				"segment_index %d out of range (the program has %d segments: want below %[2]d)", si, len(p.segments))
		}
		if i == 0 {
			p.mutSeg = int(si)
			b.mutOffsets = b.offsets(&ms)
		}
	}
	return nil
}

// offsets is a verified vector of little-endian uint64 offsets, read in
// place.
type offsets struct {
	pos int64 // position of the first element
	n   int
	fb  []byte
}

// at returns element i < n.
func (o *offsets) at(i uint32) uint64 {
	p := o.pos + 8*int64(i)
	return binary.LittleEndian.Uint64(o.fb[p : p+8])
}

// offsets returns s's offsets vector (verified by the walk).
func (b *builder) offsets(s *ptefb.SubsegmentOffsets) offsets {
	pos, n, _ := vecPos(s.Table(), vtOffsets)
	return offsets{pos: pos, n: n, fb: b.fb}
}

// namedData builds the named data table and its index.
func (b *builder) namedData() error {
	p, root := b.p, b.root
	n := root.NamedDataLength()
	if !b.spend(n) {
		return b.overBudget("Program.named_data", int64(root.Table().Pos))
	}
	p.named = make([]format.NamedData, n)
	var nd ptefb.NamedData
	for i := 0; i < n; i++ {
		root.NamedData(&nd, i)
		key := nd.Key()
		if !b.spend(len(key)) {
			return b.overBudget(idx("Program.named_data", i)+".key", int64(nd.Table().Pos))
		}
		si := nd.SegmentIndex()
		if int64(si) >= int64(len(p.segments)) {
			return b.fail(idx("Program.named_data", i)+".segment_index", int64(nd.Table().Pos),
				"segment_index %d out of range (the program has %d segments: want below %[2]d)", si, len(p.segments))
		}
		k := b.strs.Copy(key)
		p.named[i] = format.NamedData{Key: k, Segment: int(si), Data: p.segments[si]}
	}
	return nil
}

// planField is the field path of execution plan i, for errors.
func planField(i int) string { return idx("Program.execution_plan", i) }

// valueField is the field path of value v of plan i plus suffix, for
// errors.
func valueField(i, v int, suffix string) string {
	return idx(planField(i)+".values", v) + ".val" + suffix
}

// ExecutionPlan field ids (program.fbs).
const (
	planName       = 0
	planMeta       = 1
	planValues     = 2
	planInputs     = 3
	planOutputs    = 4
	planChains     = 5
	planOperators  = 6
	planDelegates  = 7
	planBufferSize = 8
)

// repeatsName reports whether name, the name of plan i (fb[pos:]), repeats
// the name of a plan before it (adding it to the names seen when it does
// not).
func (b *builder) repeatsName(i int, pos int64, name []byte) bool {
	if b.p.nmethods > maxNameSet {
		_, dup := b.p.methodIdx.Insert(i)
		return dup
	}
	return b.names.repeats(b.fb, i, pos, name)
}

// maxNameSet is the most plans whose names a nameSet checks.
const maxNameSet = 64

// nameSeed seeds the nameSet's hash: a file cannot know it, so cannot
// make its names collide on purpose (and a table of maxNameSet names costs
// at most maxNameSet² comparisons if they did).
var nameSeed = maphash.Comparable(maphash.MakeSeed(), 0) | 1

// nameHash hashes a name from its length and every byte of it.
func nameHash(name []byte) uint64 {
	h := uint64(len(name))
	for ; len(name) >= 8; name = name[8:] {
		h = bits.RotateLeft64((h^binary.LittleEndian.Uint64(name))*nameSeed, 29)
	}
	for i, c := range name {
		h ^= uint64(c) << (8 * i)
	}
	h *= nameSeed
	return h ^ h>>32
}

// nameSet finds a repeated name among up to maxNameSet names, in a hash
// table of their positions that needs no allocation of its own.
type nameSet struct {
	names [maxNameSet]struct{ pos, n uint32 } // where each name is in fb
	slots [2 * maxNameSet]uint8               // position+1; 0: empty
}

// repeats reports whether name, the name of position i (fb[pos:] in the
// FlatBuffer fb), was added before, and adds it if not.
func (s *nameSet) repeats(fb []byte, i int, pos int64, name []byte) bool {
	const mask = 2*maxNameSet - 1
	for j := nameHash(name) & mask; ; j = (j + 1) & mask {
		k := s.slots[j]
		if k == 0 {
			s.slots[j] = uint8(i + 1)
			s.names[i] = struct{ pos, n uint32 }{uint32(pos), uint32(len(name))}
			return false
		}
		if e := s.names[k-1]; string(fb[e.pos:e.pos+e.n]) == string(name) {
			return true
		}
	}
}

// checkMethod checks execution plan i, the verified table at pp, records
// its tensors (Program.recs) and charges the work budget for every element
// that building the Method (methods.go) will copy.
func (b *builder) checkMethod(i int, pp int64) error {
	fb := b.fb
	// The field path, for errors only: built when one is reported.
	pf := func() string { return planField(i) }
	// The plan's fields through its decoded vtable: the generated
	// accessors would look each up again. The walk verified them.
	fo := b.planF.Of(fb, pp) // (only checkMethod decodes plans)
	npos, nn := fbread.FieldVector(fb, pp, fo[planName])
	name := fb[npos : npos+nn]
	if !b.spend(len(name)) {
		return b.overBudget(pf()+".name", pp)
	}
	if b.repeatsName(i, npos, name) {
		return b.fail(pf()+".name", pp, "execution plan name %q repeats an earlier plan's", name)
	}
	if fo[planMeta] != 0 {
		cm := fbread.Deref(fb, pp+fo[planMeta])
		cf := b.metaF.Of(fb, cm)
		_, in := fbread.FieldVector(fb, cm, cf[0])
		_, out := fbread.FieldVector(fb, cm, cf[1])
		if !b.spend(int(in + out)) {
			return b.overBudget(pf()+".container_meta_type", pp)
		}
	}

	vstart, n := fbread.FieldVector(fb, pp, fo[planValues])
	nv := int(n)
	if !b.spend(nv) {
		return b.overBudget(pf()+".values", pp)
	}
	if b.recs == nil {
		// Most values of a weights-heavy program are its tensors: start
		// with room for all of them (a guess, not a bound).
		b.p.recBuf = getRecs(nv)
		b.recs = (*b.p.recBuf)[:0]
	}
	// The EValue vtable's tag and value offsets, of the vtable read last
	// (vt1 its position + 1).
	var vt1, tagAt, valAt int64
	for v := range nv {
		pos := fbread.Deref(fb, vstart+4*int64(v))
		if vt := pos - int64(int32(binary.LittleEndian.Uint32(fb[pos:]))); vt+1 != vt1 {
			fo := b.evalueF.Of(fb, pos)
			vt1, tagAt, valAt = vt+1, fo[0], fo[1]
		}
		// Scalars need no check, lists are checked by the method's check,
		// and most tensors take quickTensor: the rest goes on to value.
		if tagAt != 0 && valAt != 0 {
			if fb[pos+tagAt] != tagTensor || !b.noQuick && b.quickTensor(fbread.Deref(fb, pos+valAt), len(name)) {
				continue
			}
		}
		if err := b.value(i, name, v, nv, pos); err != nil {
			return err
		}
	}

	if v := i32s(fbread.FieldBytes(fb, pp, fo[planInputs], 4)); !b.indicesOK(v, nv) {
		if err := b.checkIndices(v, 0, nv, pf, ".inputs", pp); err != nil {
			return err
		}
	}
	if v := i32s(fbread.FieldBytes(fb, pp, fo[planOutputs], 4)); !b.indicesOK(v, nv) {
		if err := b.checkIndices(v, 0, nv, pf, ".outputs", pp); err != nil {
			return err
		}
	}

	ostart, n := fbread.FieldVector(fb, pp, fo[planOperators])
	no := int(n)
	if !b.spend(no) {
		return b.overBudget(pf()+".operators", pp)
	}
	for k := range no {
		op := fbread.Deref(fb, ostart+4*int64(k))
		of := b.opF.Of(fb, op)
		_, nm := fbread.FieldVector(fb, op, of[0])
		_, ov := fbread.FieldVector(fb, op, of[1])
		if !b.spend(int(nm + ov)) {
			return b.overBudget(idx(pf()+".operators", k), op)
		}
	}

	if _, nb := fbread.FieldVector(fb, pp, fo[planBufferSize]); !b.spend(int(nb)) {
		return b.overBudget(pf()+".non_const_buffer_sizes", pp)
	}

	if err := b.checkDelegates(pp, fo[planDelegates], pf); err != nil {
		return err
	}

	cstart, n := fbread.FieldVector(fb, pp, fo[planChains])
	nc := int(n)
	if !b.spend(nc) {
		return b.overBudget(pf()+".chains", pp)
	}
	for c := range nc {
		pos := fbread.Deref(fb, cstart+4*int64(c))
		cf := b.chainF.Of(fb, pos)
		in := i32s(fbread.FieldBytes(fb, pos, cf[0], 4))
		if b.indicesOK(in, nv) {
			if b.indicesOK(i32s(fbread.FieldBytes(fb, pos, cf[1], 4)), nv) {
				continue
			}
			b.budget += int64(in.len()) // checkChain charges it again
		}
		if err := b.checkChain(pos, nv, i, c); err != nil {
			return err
		}
	}
	return nil
}

// indicesOK charges the entries of v to the work budget and reports
// whether each is a value index in [0, nv): checkIndices' outcome when it
// succeeds. When not, it charges nothing, and checkIndices reports the
// problem. (With noQuick it reports false.)
func (b *builder) indicesOK(v i32s, nv int) bool {
	if b.noQuick {
		return false
	}
	if b.spend(v.len()) && v.bad(0, nv) < 0 {
		return true
	}
	b.budget += int64(v.len())
	return false
}

// i32s is the bytes of a verified vector of int32 (value indices).
type i32s []byte

// i32Field returns the [int] vector at field vtable offset vt of t (empty
// when absent).
func i32Field(t flatbuffers.Table, vt flatbuffers.VOffsetT) i32s {
	pos, n, ok := vecPos(t, vt)
	if !ok {
		return nil
	}
	return i32s(t.Bytes[pos : pos+4*int64(n)])
}

func (v i32s) len() int       { return len(v) / 4 }
func (v i32s) at(k int) int32 { return int32(binary.LittleEndian.Uint32(v[4*k:])) }

// bad returns the position of the first entry outside [lo, hi), or -1.
func (v i32s) bad(lo, hi int) int {
	for k := 0; len(v) >= 4; k++ {
		if x := int(int32(binary.LittleEndian.Uint32(v))); x < lo || x >= hi {
			return k
		}
		v = v[4:]
	}
	return -1
}

// checkIndices charges the entries of v to the work budget and checks
// that each is a value index in [lo, nv) (lo -1 where an entry may name no
// value). The error names field()+suffix.
func (b *builder) checkIndices(v i32s, lo, nv int, field func() string, suffix string, pos int64) error {
	if !b.spend(v.len()) {
		return b.overBudget(field()+suffix, pos)
	}
	k := v.bad(lo, nv)
	switch {
	case k < 0:
		return nil
	case lo < 0:
		return b.fail(idx(field()+suffix, k), pos, "value index %d out of range (-1 or 0..%d)", v.at(k), nv-1)
	}
	return b.fail(idx(field()+suffix, k), pos, "value index %d out of range (the plan has %d values)", v.at(k), nv)
}

// checkChain checks the inputs and outputs of chain c of plan i, the
// verified table at pos (Method.check checks its instructions).
func (b *builder) checkChain(pos int64, nv int, i, c int) error {
	field := func() string { return idx(planField(i)+".chains", c) }
	cf := b.chainF.Of(b.fb, pos)
	if err := b.checkIndices(i32s(fbread.FieldBytes(b.fb, pos, cf[0], 4)), 0, nv, field, ".inputs", pos); err != nil {
		return err
	}
	return b.checkIndices(i32s(fbread.FieldBytes(b.fb, pos, cf[1], 4)), 0, nv, field, ".outputs", pos)
}

// checkDelegates checks the backend delegates of the plan at pp (the
// delegates field at table offset fo): their processed data references,
// and the work their ids and compile specs take to copy.
func (b *builder) checkDelegates(pp, fo int64, pf func() string) error {
	start, n := fbread.FieldVector(b.fb, pp, fo)
	nd := int(n)
	if nd == 0 {
		return nil
	}
	if !b.spend(nd) {
		return b.overBudget(pf()+".delegates", pp)
	}
	p, root := b.p, &b.root
	var bd ptefb.BackendDelegate
	var ref ptefb.BackendDelegateDataReference
	var cs ptefb.CompileSpec
	var inl ptefb.BackendDelegateInlineData
	for k := range nd {
		bd.Init(b.fb, flatbuffers.UOffsetT(fbread.Deref(b.fb, start+4*int64(k))))
		field := func() string { return idx(pf()+".delegates", k) }
		pos := int64(bd.Table().Pos)
		id := bd.Id()
		if !b.spend(len(id)) {
			return b.overBudget(field()+".id", pos)
		}
		ncs := bd.CompileSpecsLength()
		if !b.spend(ncs) {
			return b.overBudget(field()+".compile_specs", pos)
		}
		for c := 0; c < ncs; c++ {
			bd.CompileSpecs(&cs, c)
			if !b.spend(len(cs.Key()) + cs.ValueLength()) {
				return b.overBudget(idx(field()+".compile_specs", c), int64(cs.Table().Pos))
			}
		}
		if bd.Processed(&ref) == nil {
			return b.fail(field()+".processed", pos, "delegate %q has no processed data reference", id)
		}
		ri := ref.Index()
		rpos := int64(ref.Table().Pos)
		switch loc := ref.Location(); loc {
		case int8(DelegateInline):
			nb := root.BackendDelegateDataLength()
			if int64(ri) >= int64(nb) {
				return b.fail(field()+".processed.index", rpos,
					"inline delegate data index %d out of range (backend_delegate_data has %d entries)", ri, nb)
			}
			root.BackendDelegateData(&inl, int(ri))
			dpos, dn, _ := vecPos(inl.Table(), vtFirstField)
			if _, err := segment.New(p.mf, dpos, int64(dn)); err != nil {
				return b.fail(field()+".processed", rpos, "inline delegate data: %v", err)
			}
		case int8(DelegateSegment):
			if int64(ri) >= int64(len(p.segments)) {
				return b.fail(field()+".processed.index", rpos,
					"delegate segment index %d out of range (the program has %d segments)", ri, len(p.segments))
			}
		default:
			return b.fail(field()+".processed.location", rpos,
				"unknown delegate data location %d (want 0 INLINE or 1 SEGMENT)", loc)
		}
	}
	p.ndelegates += nd
	return nil
}

// value checks value v of plan i (named name, of nv values), the EValue
// table at pos: a tensor as tensor does, a tensor list's items in the
// method's check.
func (b *builder) value(i int, name []byte, v, nv int, pos int64) error {
	fb := b.fb
	fo := b.evalueF.Of(fb, pos)
	var tag byte
	if fo[0] != 0 {
		tag = fb[pos+fo[0]]
	}
	if tag == 0 || fo[1] == 0 {
		return nil // NONE (the walk requires a value for any other tag)
	}
	val := fbread.Deref(fb, pos+fo[1])
	switch tag {
	case tagTensor:
		x := b.readTensor(val)
		return b.tensor(i, name, v, &x)
	case tagTensorList, tagOptionalTensorList:
		if !b.deferred {
			return nil // the method's check
		}
		// Value indices; an optional list may hold -1 (no tensor).
		x := i32Field(flatbuffers.Table{Bytes: fb, Pos: flatbuffers.UOffsetT(val)}, vtListItems)
		lo := 0
		if tag == tagOptionalTensorList {
			lo = -1
		}
		return b.checkIndices(x, lo, nv, func() string { return valueField(i, v, "") }, ".items", val)
	}
	return nil
}

// tensorAt returns the position of the Tensor table of the verified
// EValue at pos, or -1 when the value is not a tensor.
func tensorAt(fb []byte, f *fbread.Fields, pos int64) int64 {
	fo := f.Of(fb, pos)
	if fo[0] == 0 || fo[1] == 0 || fb[pos+fo[0]] != tagTensor {
		return -1
	}
	return fbread.Deref(fb, pos+fo[1])
}

// The KernelTypes union tags the builder reads.
const (
	tagTensor             = uint8(ptefb.KernelTypesTensor)
	tagTensorList         = uint8(ptefb.KernelTypesTensorList)
	tagOptionalTensorList = uint8(ptefb.KernelTypesOptionalTensorList)
)

// Tensor field ids (program.fbs).
const (
	tScalarType     = 0
	tSizes          = 2
	tDimOrder       = 3
	tRequiresGrad   = 4
	tDataBufferIdx  = 5
	tAllocationInfo = 6
	tExtraInfo      = 9

	// ExtraTensorInfo's fully_qualified_name and location.
	etiFQN      = 1
	etiLocation = 2
)

// rawTensor is what Open needs of a Tensor table.
type rawTensor struct {
	pos          int64
	scalarType   int8
	requiresGrad bool
	sizes        i32s
	dimOrder     []byte
	dbi          uint32
	planned      bool
	hasETI       bool
	etiPos       int64
	fqn          []byte
	location     int8
}

// readTensor decodes the verified Tensor table at pos, through the vtables
// the builder decoded last.
func (b *builder) readTensor(pos int64) (x rawTensor) {
	fb := b.fb
	x.pos = pos
	fo := b.tensorF.Of(fb, pos)
	if f := fo[tScalarType]; f != 0 {
		x.scalarType = int8(fb[pos+f])
	}
	if f := fo[tRequiresGrad]; f != 0 {
		x.requiresGrad = fb[pos+f] != 0
	}
	x.sizes = i32s(fbread.FieldBytes(fb, pos, fo[tSizes], 4))
	x.dimOrder = fbread.FieldBytes(fb, pos, fo[tDimOrder], 1)
	if f := fo[tDataBufferIdx]; f != 0 {
		x.dbi = binary.LittleEndian.Uint32(fb[pos+f:])
	}
	x.planned = fo[tAllocationInfo] != 0
	if f := fo[tExtraInfo]; f != 0 {
		e := fbread.Deref(fb, pos+f)
		ef := b.etiF.Of(fb, e)
		x.hasETI, x.etiPos = true, e
		x.fqn = fbread.FieldBytes(fb, e, ef[etiFQN], 1)
		if f := ef[etiLocation]; f != 0 {
			x.location = int8(fb[e+f])
		}
	}
	return x
}

// tensor checks a tensor value (value v of plan i, named mname) and, when
// the file holds or names its data, records it (Program.recs); a tensor
// without data is left to the method's check.
func (b *builder) tensor(i int, mname []byte, v int, x *rawTensor) error {
	p := b.p
	external := x.hasETI && x.location == locExternal
	dbi := x.dbi
	loc := location(external, dbi, x.planned, p.inlineConsts)
	if (loc == format.LocNone) != b.deferred {
		return nil // checked by Open, or left to the method's check
	}
	pos := x.pos
	st := x.scalarType
	dt, msg := dtypeOf(st)
	if msg != "" {
		return b.fail(valueField(i, v, ".scalar_type"), pos, "%s", msg)
	}
	ns := x.sizes.len()
	nd := len(x.dimOrder)
	if !b.spend(ns + nd) {
		return b.overBudget(valueField(i, v, ".sizes"), pos)
	}
	zero := false
	for k := 0; k < ns; k++ {
		s := x.sizes.at(k)
		if s < 0 {
			return b.fail(idx(valueField(i, v, ".sizes"), k), pos, "negative size %d (want >= 0)", s)
		}
		zero = zero || s == 0
	}
	if nd > 0 {
		if nd != ns {
			return b.fail(valueField(i, v, ".dim_order"), pos, "dim_order has %d entries for %d sizes", nd, ns)
		}
		var seen [4]uint64 // a bit per dimension (entries are bytes)
		for k, d := range x.dimOrder {
			if int(d) >= nd || seen[d>>6]&(1<<(d&63)) != 0 {
				return b.fail(idx(valueField(i, v, ".dim_order"), k), pos, "dim_order entry %d is not a permutation of 0..%d", d, nd-1)
			}
			seen[d>>6] |= 1 << (d & 63)
		}
	}
	fqn := x.fqn
	if x.hasETI {
		if !b.spend(len(fqn)) {
			return b.overBudget(valueField(i, v, ".extra_tensor_info.fully_qualified_name"), pos)
		}
		if loc := x.location; loc != locSegment && loc != locExternal {
			return b.fail(valueField(i, v, ".extra_tensor_info.location"), x.etiPos,
				"unknown tensor data location %d (want 0 SEGMENT or 1 EXTERNAL)", loc)
		}
	}
	if loc == format.LocNone {
		return nil // no data in the file: nothing of it is kept
	}
	name := func() string { // for errors only
		if len(fqn) > 0 {
			return string(fqn)
		}
		return string(mname) + "/values/" + strconv.Itoa(v)
	}
	maxBytes := b.size
	if external {
		maxBytes = math.MaxInt64
	}
	nbytes, ok := b.nbytes(x.sizes, zero, dt, maxBytes)
	if !ok {
		return b.fail(valueField(i, v, ".sizes"), pos, "tensor %q: numel × %d-byte elements overflows or exceeds the %d-byte file", name(), dt.Size(), b.size)
	}
	r := tensorRec{
		off: -1, nbytes: nbytes, tensor: uint32(pos), loc: loc, dt: dt,
	}
	switch loc {
	case format.LocExternal:
		if len(fqn) == 0 {
			return b.fail(valueField(i, v, ".extra_tensor_info.fully_qualified_name"), pos, "external tensor has no fully-qualified name to find its data by")
		}
		b.external++
	case format.LocInline:
		cb := b.root.ConstantBufferLength()
		if int64(dbi) >= int64(cb) {
			if cb == 0 {
				return b.fail(valueField(i, v, ".data_buffer_idx"), pos, "tensor %q has data_buffer_idx %d but the program has no constant data (no constant_segment, empty constant_buffer)", name(), dbi)
			}
			return b.fail(valueField(i, v, ".data_buffer_idx"), pos, "tensor %q: data_buffer_idx %d out of range (constant_buffer has %d entries: want below %[3]d)", name(), dbi, cb)
		}
		var buf ptefb.Buffer
		b.root.ConstantBuffer(&buf, int(dbi))
		spos, sn, _ := vecPos(buf.Table(), vtFirstField)
		if int64(sn) < nbytes {
			return b.fail(idx("Program.constant_buffer", int(dbi))+".storage", spos,
				"tensor %q needs %d bytes but its constant_buffer storage holds %d", name(), nbytes, sn)
		}
		if _, err := segment.New(p.mf, spos, nbytes); err != nil {
			return b.fail(valueField(i, v, ".data_buffer_idx"), pos, "tensor %q: %v", name(), err)
		}
		r.off = spos
	case format.LocSegment, format.LocMutable:
		seg, offs, what := p.constSeg, b.constOffsets, "constant_segment"
		if loc == format.LocMutable {
			seg, offs, what = p.mutSeg, b.mutOffsets, "mutable_data_segments[0]"
			if seg < 0 {
				return b.fail(valueField(i, v, ".data_buffer_idx"), pos, "mutable tensor %q has data_buffer_idx %d but the program has no mutable_data_segments", name(), dbi)
			}
		}
		if int64(dbi) >= int64(offs.n) {
			return b.fail(valueField(i, v, ".data_buffer_idx"), pos, "tensor %q: data_buffer_idx %d out of range (%s has %d offsets: want below %[4]d)", name(), dbi, what, offs.n)
		}
		off := offs.at(dbi)
		ss := p.segments[seg]
		if off > uint64(ss.Len()) || uint64(nbytes) > uint64(ss.Len())-off {
			return b.fail(valueField(i, v, ".data_buffer_idx"), pos, "tensor %q: bytes [%d, %d+%d) lie outside its %d-byte segment %d (%s)",
				name(), off, off, nbytes, ss.Len(), seg, what)
		}
		r.off = ss.Offset() + int64(off)
	}
	// A record, and later a Tensor and an index entry, per tensor; a
	// made-up name repeats the method's name, charged each time.
	cost := tensorCost
	if len(fqn) == 0 {
		cost += len(mname) + len("/values/") + 10
	}
	if !b.spend(cost) {
		return b.overBudget(valueField(i, v, ""), pos)
	}
	b.recs = append(b.recs, r)
	return nil
}

// nbytes returns the byte size of a tensor of type dt and the given sizes
// (none negative; zero reports whether one is 0), as format.Numel does,
// and false when it exceeds maxBytes or overflows.
func (b *builder) nbytes(sizes i32s, zero bool, dt format.DType, maxBytes int64) (int64, bool) {
	elems, bsize := dt.Block()
	if elems != 1 || maxBytes < 0 {
		dims := b.dims[:0]
		for k := range sizes.len() {
			dims = append(dims, int64(sizes.at(k)))
		}
		b.dims = dims
		_, n, ok := format.Numel(dims, dt, maxBytes)
		return n, ok
	}
	if zero {
		return 0, true
	}
	limit, n := uint64(maxBytes), uint64(bsize)
	if n > limit {
		return 0, false
	}
	for k := range sizes.len() {
		hi, lo := bits.Mul64(n, uint64(sizes.at(k)))
		if hi != 0 || lo > limit {
			return 0, false
		}
		n = lo
	}
	return int64(n), true
}

// tensorCost is the work budget charged per tensor kept, so that the
// records, list and index of shared tensor tables stay in proportion to
// the FlatBuffer (within hostile.AllocFactor).
const tensorCost = 24

// location says where a tensor's data lives: external (by name), the
// mutable data segment (planned, with initial data), inline in the legacy
// constant_buffer, the constant segment, or nowhere in the file.
func location(external bool, dbi uint32, planned, inlineConsts bool) format.Location {
	switch {
	case external:
		return format.LocExternal
	case dbi > 0 && planned:
		return format.LocMutable
	case dbi > 0 && inlineConsts:
		return format.LocInline
	case dbi > 0:
		return format.LocSegment
	}
	return format.LocNone
}
