package pte_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/pte"
)

// laneAgrees opens b with the lane (lane.go) and without it, in order on
// one goroutine, with opts for each, and compares: the same error, or the
// same program. Where the lane has an assembly loop (lane_amd64.s) it
// opens b with that loop twice, its buffer against an unreadable page
// after it and before it (so that a read outside the buffer faults), and
// with the Go loop, and checks that the two loops read the same values.
func laneAgrees(b []byte, opts ...pte.Option) error {
	opts = append(opts[:len(opts):len(opts)], pte.WithWorkers(1))
	without, oerr := pte.NewBytes(b, append(opts, pte.WithoutLane())...)
	if oerr == nil {
		defer without.Close()
	}
	type run struct {
		name string
		opt  pte.Option
	}
	runs := []run{{"the lane", pte.WithGoLane()}}
	if pte.LaneAsm {
		runs = []run{
			{"the lane's Go loop", pte.WithGoLane()},
			{"the lane's assembly loop (unreadable page after)", pte.WithReaderBuffer(func(fb []byte) ([]byte, func()) { return guarded(fb, true) })},
			{"the lane's assembly loop (unreadable page before)", pte.WithReaderBuffer(func(fb []byte) ([]byte, func()) { return guarded(fb, false) })},
		}
	}
	var read []int64
	for _, r := range runs {
		before := pte.LaneValues()
		with, werr := pte.NewBytes(b, append(opts, r.opt)...)
		read = append(read, pte.LaneValues()-before)
		if werr != nil || oerr != nil {
			if werr == nil || oerr == nil || werr.Error() != oerr.Error() {
				if werr == nil {
					with.Close()
				}
				return fmt.Errorf("with %s: %v; without the lane: %v", r.name, werr, oerr)
			}
			continue
		}
		err := samePrograms(without, with)
		with.Close()
		if err != nil {
			return fmt.Errorf("with %s: %v", r.name, err)
		}
	}
	for i := 1; i < len(read); i++ {
		if read[i] != read[0] {
			return fmt.Errorf("%s read %d values, %s %d", runs[0].name, read[0], runs[i].name, read[i])
		}
	}
	return nil
}

// laneProgram is a plan whose values take the lane and leave it in every
// way: constants of several ranks and types (a scalar, an empty tensor,
// ranks 1 to 5, 8 and 9, permuted dim orders of ranks 2 to 4, a type whose
// code is the default 0 and so absent), tables with other vtables
// (requires_grad set, no dim_order), values that are not tensors, planned
// and external tensors, a tensor sharing another's data, and a second
// method with a longer name.
func laneProgram() *writer.PTE {
	c := func(st int8, sizes ...int32) writer.PTETensor {
		return writer.PTETensor{Kind: writer.PTEConstant, ScalarType: st, Sizes: sizes}
	}
	perm := c(writer.PTEFloat32, 1, 2, 3, 4)
	perm.DimOrder = []uint8{0, 2, 3, 1}
	grad := c(writer.PTEFloat32, 3)
	grad.RequiresGrad = true
	nodims := c(writer.PTEInt8, 2, 2)
	nodims.NoDimOrder = true
	shared := c(writer.PTEFloat32, 2, 3)
	shared.BufferRef = 1
	perm3 := c(writer.PTEInt8, 2, 3, 4)
	perm3.DimOrder = []uint8{2, 0, 1}
	perm2 := c(writer.PTEFloat16, 3, 2)
	perm2.DimOrder = []uint8{1, 0}
	fwd := writer.PTEMethod{Name: "forward", Tensors: []writer.PTETensor{
		c(writer.PTEFloat32, 2, 3), c(writer.PTEFloat32), c(writer.PTEFloat32, 0, 4), perm,
		c(0, 5), c(writer.PTEInt8, 7), c(writer.PTEFloat16, 2, 2), perm2,
		grad, c(writer.PTEFloat32, 4), nodims, c(writer.PTEInt8, 3),
		{Kind: writer.PTEPlanned, ScalarType: writer.PTEFloat32, Sizes: []int32{2}},
		c(writer.PTEFloat32, 8), shared, c(writer.PTEInt32, 1, 1),
		{Kind: writer.PTEExternal, ScalarType: writer.PTEFloat32, Sizes: []int32{2}, Name: "ext"},
		c(writer.PTEFloat32, 6), c(writer.PTEFloat32, 2),
		c(writer.PTEFloat32, 2, 1, 3), perm3, c(writer.PTEInt8, 1, 2, 1, 2, 1),
		c(writer.PTEInt8, 1, 1, 1, 1, 1, 1, 1, 2), c(writer.PTEInt8, 1, 1, 1, 1, 1, 1, 1, 1, 2),
		c(writer.PTEInt8, 3, 1, 1, 2),
	}, Values: []writer.PTEValue{{Kind: writer.PTEInt, Int: 3}, {Kind: writer.PTENull}}}
	enc := writer.PTEMethod{Name: "a_longer_method_name", Tensors: []writer.PTETensor{
		c(writer.PTEFloat32, 3, 3), c(writer.PTEInt8, 9), c(writer.PTEFloat32, 1),
	}}
	return &writer.PTE{Methods: []writer.PTEMethod{fwd, enc}, SegmentAlignment: 64, TensorAlignment: 16}
}

// The lane reads most of laneProgram's values and every program reads the
// same with it as without it: laneProgram and each of its single-byte
// changes (0x00, 0xFF, low bit flipped) in the FlatBuffer, the generated
// programs, and plans that share one tensor table until the work budget
// runs out (with a short and a 10,000-byte method name).
func TestLaneAgrees(t *testing.T) {
	b, err := laneProgram().Bytes()
	if err != nil {
		t.Fatal(err)
	}
	before := pte.LaneValues()
	if err := laneAgrees(b); err != nil {
		t.Fatal(err)
	}
	// 16 of its 30 values take the lane: each constant whose vtables the
	// value before it used (the others arm it), of rank 8 or less.
	// (laneAgrees opens it with the lane once, or three times where the
	// lane has an assembly loop.)
	opens := int64(1)
	if pte.LaneAsm {
		opens = 3
	}
	if got := (pte.LaneValues() - before) / opens; got < 16 {
		t.Fatalf("the lane read %d values of laneProgram, want at least 16", got)
	}
	end, err := hostile.FlatBufferEnd(b)
	if err != nil {
		t.Fatal(err)
	}
	step, why := hostile.Sampling()
	if step > 1 {
		t.Logf("every %dth offset (%s)", step, why)
	}
	failed := 0
	m := bytes.Clone(b)
	cases := hostile.Mutations(m, end, step, func(off int64, x byte) {
		if err := laneAgrees(m); err != nil {
			t.Errorf("byte %d = %#x: %v", off, x, err)
		}
		if _, err := pte.NewBytes(m); err != nil {
			failed++
		}
	})
	t.Logf("%d mutations (%d rejected)", cases, failed)

	gen, err := hostile.GeneratedPTE()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range gen {
		if err := laneAgrees(s.Data); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
	for _, method := range []string{"forward", strings.Repeat("m", 10000)} {
		if err := laneAgrees(sharedFile(t, 0, 20000, "", method)); err != nil {
			t.Errorf("shared scalar, method name of %d bytes: %v", len(method), err)
		}
	}
	if err := laneAgrees(sharedFile(t, 3, 20000, "", "forward")); err != nil {
		t.Errorf("shared rank-3 tensor: %v", err)
	}
}

// The lane counts what the general way counts, and stops where it stops:
// laneProgram reads the same with and without it under every object limit
// and every work budget up to what it needs, and with its values' reader
// seeing the FlatBuffer end at every byte (so that each table, vector and
// field the lane reads is, in some case, cut short by the end).
func TestLaneBounds(t *testing.T) {
	b, err := laneProgram().Bytes()
	if err != nil {
		t.Fatal(err)
	}
	end, err := hostile.FlatBufferEnd(b)
	if err != nil {
		t.Fatal(err)
	}
	// Each limit from 1 up to past what the program needs (found as the
	// first that opens it).
	for _, limit := range []struct {
		name string
		opt  func(n int) pte.Option
	}{
		{"objects", func(n int) pte.Option { return pte.WithLimits(n, 0, 0) }},
		{"budget", func(n int) pte.Option { return pte.WithLimits(0, int64(n), 0) }},
	} {
		need := 0
		for n := 1; n < 1<<20 && need == 0; n++ {
			if err := laneAgrees(b, limit.opt(n)); err != nil {
				t.Fatalf("%s limit %d: %v", limit.name, n, err)
			}
			if p, err := pte.NewBytes(b, limit.opt(n)); err == nil {
				p.Close()
				need = n
			}
		}
		if need == 0 {
			t.Fatalf("no %s limit opens the program", limit.name)
		}
		t.Logf("%s: opens from %d", limit.name, need)
	}
	// A FlatBuffers builder writes each tensor's vectors after (above) its
	// table and the tables of later values below, so that a cut that ends
	// a value's vector also ends every value before it, and the lane
	// stops before it gets there. With the values in reverse order it
	// meets each cut vector, table and field first.
	for _, prog := range []struct {
		name string
		b    []byte
	}{
		{"in order", b},
		{"values reversed", reverseValues(t, b, false)},
		{"values reversed, a dim order shared", reverseValues(t, b, true)},
	} {
		for cut := 1; cut < int(end); cut++ {
			if err := laneAgrees(prog.b, pte.WithLimits(0, 0, cut)); err != nil {
				t.Fatalf("%s, values read up to byte %d: %v", prog.name, cut, err)
			}
		}
	}
}

// reverseValues returns b with the values of its first plan in reverse
// order. With shareDims, a tensor of value 0's rank takes value 0's
// dim_order vector, which then lies above (after) its sizes vector.
func reverseValues(t *testing.T, b []byte, shareDims bool) []byte {
	fb := hostile.FB{B: bytes.Clone(b)}
	vec, n := fb.Vector(fb.Path([2]int{progExecutionPlan, 0}), planValues)
	targets := make([]int, n)
	for i := range targets {
		targets[i] = fb.Deref(vec + 4 + 4*i)
	}
	if shareDims {
		// The first tensor of value 0's rank that the lane reads (the
		// value before it is a tensor with the same vtable) takes value
		// 0's dim_order: the lane, not the general way, meets its end.
		tensor := func(ev int) int {
			if f := fb.Field(ev, evalType); f < 0 || fb.B[f] != 5 {
				return -1
			}
			return fb.Table(ev, evalVal)
		}
		_, rank := fb.Vector(tensor(targets[0]), tensorSizes)
		dims := fb.Table(tensor(targets[0]), tensorDimOrder)
		shared := false
		for i := n - 2; i > 0 && !shared; i-- { // in reading order
			x, prev := tensor(targets[i]), tensor(targets[i+1])
			if x < 0 || prev < 0 || fb.VTable(x) != fb.VTable(prev) {
				continue
			}
			if f := fb.Field(x, tensorDimOrder); f > 0 && f < dims {
				if _, r := fb.Vector(x, tensorSizes); r == rank {
					fb.PutU32(f, uint32(dims-f))
					shared = true
				}
			}
		}
		if !shared {
			t.Fatal("no tensor the lane reads has value 0's rank")
		}
	}
	for i := range targets {
		slot, target := vec+4+4*i, targets[n-1-i]
		if target <= slot {
			t.Fatalf("value %d lies before the values vector", n-1-i)
		}
		fb.PutU32(slot, uint32(target-slot))
	}
	if err := laneAgrees(fb.B); err != nil {
		t.Fatalf("values reversed: %v", err)
	}
	return fb.B
}

// laneNumelSizes are tensor sizes whose product overflows 64 bits (so
// would wrap to a small number or 0; 2147352580 × 1073807362 × 8 bytes
// wraps to 64), exceeds the file, or includes a negative or a zero, for
// each rank the lane multiplies its own way (1 to 4) and the ranks above.
var laneNumelSizes = func() [][]int32 {
	const big = 1<<31 - 1
	return [][]int32{
		{big}, {-1}, {65536, 65536}, {-1, -1}, {-1, 0}, {0, big},
		{big, big, big}, {big, big, 0}, {2, -2, 2}, {65536, 65536, 4},
		{65536, 65536, 65536, 65536}, {0, big, big, big}, {big, big, big, 0},
		{1, 65536, 65536, 1}, {2, 2, 2, -1}, {1 << 16, 1 << 16, 1 << 16, 1 << 16, 1 << 16},
		{big, big, big, big, big, big}, {1, 1, 1, 1, 0, big, big, big}, {1, 1, 1, 1, 1, -1},
		{16, 16, 1 << 28, 1 << 28}, {1 << 30, 1 << 30, 16}, {2147352580, 1073807362},
		{0, -1}, {0, 1, -1}, {0, 1, 1, -1}, {1, 1, 0, -1}, {0, 1, 1, 1, 1, -1},
	}
}()

// laneNumelProgram is a program whose second tensor has the given sizes
// and type, and room for size bytes; the first, of the same rank and
// type, arms the lane with the same vtables, so that the lane, not the
// general way, meets the second first.
func laneNumelProgram(sizes []int32, st int8, size int64) *writer.PTE {
	m := writer.PTEMethod{Name: "forward", Tensors: []writer.PTETensor{
		{Kind: writer.PTEConstant, ScalarType: st, Sizes: make([]int32, len(sizes))},
		{Kind: writer.PTEConstant, ScalarType: st, Sizes: sizes, Size: size},
	}}
	return &writer.PTE{Methods: []writer.PTEMethod{m}}
}

// A constant's offset in the segment is a uint64 read from the file: the
// lane reads the same as the general way when it lies at or past the
// segment's end, or so near 2^64 that it and the tensor's bytes add up
// past it (a sum that must not wrap round).
func TestLaneOffsets(t *testing.T) {
	const progConstSegment, subsegOffsets = 5, 1
	b, err := laneProgram().Bytes()
	if err != nil {
		t.Fatal(err)
	}
	fb := hostile.FB{B: b}
	pos, n := fb.Vector(fb.Table(fb.Root(), progConstSegment), subsegOffsets)
	if n < 2 {
		t.Fatalf("%d constant offsets", n)
	}
	for i := range n {
		at := pos + 4 + 8*i
		orig := binary.LittleEndian.Uint64(b[at:])
		for _, off := range []uint64{1<<64 - 1, 1<<64 - 4, 1<<64 - 8, 1<<64 - 24, 1<<64 - 64, 1 << 63, 1 << 32, 1<<32 - 1, orig + 1<<20} {
			fb.PutU64(at, off)
			if err := laneAgrees(b); err != nil {
				t.Errorf("offset %d = %#x: %v", i, off, err)
			}
		}
		fb.PutU64(at, orig)
	}
}

// The lane multiplies a tensor's sizes in 64 bits, without the general
// way's 128-bit products: each of laneNumelSizes reads the same with the
// lane as without it, as 8-byte elements in a small file.
func TestLaneNumel(t *testing.T) {
	before := pte.LaneValues()
	for _, sizes := range laneNumelSizes {
		b, err := laneNumelProgram(sizes, writer.PTEFloat64, 64).Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if err := laneAgrees(b); err != nil {
			t.Errorf("sizes %v: %v", sizes, err)
		}
	}
	if pte.LaneValues() == before {
		t.Error("the lane read none of the tensors") // (those with a 0 are valid)
	}
}

// The same in a 5 GiB file (sparse) whose constant segment holds 5 GiB,
// as 1-byte elements: there the lane's limit on a product (2^32 - 1) is
// below the file's size, and a negative size read as a uint32 is not
// above it.
func TestLaneNumelLargeFile(t *testing.T) {
	if strconv.IntSize == 32 {
		t.Skip("a 5 GiB file does not fit a 32-bit address space")
	}
	path := filepath.Join(t.TempDir(), "big.pte")
	before := pte.LaneValues()
	open := func(opts ...pte.Option) (*pte.Program, error) {
		return pte.Open(path, append(opts, pte.WithWorkers(1))...)
	}
	for _, sizes := range laneNumelSizes {
		if _, err := laneNumelProgram(sizes, writer.PTEInt8, 5<<30).WriteFile(path); err != nil {
			t.Fatal(err)
		}
		with, werr := open()
		without, oerr := open(pte.WithoutLane())
		switch {
		case werr != nil || oerr != nil:
			if werr == nil || oerr == nil || werr.Error() != oerr.Error() {
				t.Errorf("sizes %v: with the lane: %v; without: %v", sizes, werr, oerr)
			}
		default:
			if err := samePrograms(without, with); err != nil {
				t.Errorf("sizes %v: %v", sizes, err)
			}
		}
		for _, p := range []*pte.Program{with, without} {
			if p != nil {
				p.Close()
			}
		}
	}
	if pte.LaneValues() == before {
		t.Error("the lane read none of the tensors")
	}
}
