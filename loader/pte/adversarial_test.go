package pte_test

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/hostile/ptecheck"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

// openChecked opens b with NewBytes and checks every method (the
// instructions Open leaves to each method's first use): a file is
// accepted only when both pass.
func openChecked(b []byte, opts ...pte.Option) (*pte.Program, error) {
	p, err := pte.NewFile(mmapfile.NewBytes(b), opts...)
	if err != nil {
		return nil, err
	}
	if err := p.VerifyMethods(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// pteTarget opens with openChecked and exercises every accessor and view.
var pteTarget = hostile.Target{Format: "pte", Open: func(b []byte) (func() error, error) {
	p, err := openChecked(b)
	if err != nil {
		return nil, err
	}
	return func() error {
		defer p.Close()
		return ptecheck.Program(p)
	}, nil
}}

// Field ids of the program schema (FORMATS.md §1).
const (
	progExecutionPlan = 1
	progSegments      = 4
	progMutableSegs   = 6
	planName          = 0
	planValues        = 2
	planChains        = 5
	planDelegates     = 7
	evalType          = 0
	evalVal           = 1
	tensorScalarType  = 0
	tensorSizes       = 2
	tensorDimOrder    = 3
	tensorDataBuffer  = 5
	segOffset         = 0
	segSize           = 1
	subsegIndex       = 0
	chainInstructions = 2
	instrType         = 0
	listItems         = 0
)

// adversarialBase is a program with constants of every kind, segments,
// delegates, lists and several methods (ptecheck.Generated's rich.pte).
func adversarialBase(t *testing.T) []byte {
	t.Helper()
	gen, err := ptecheck.Generated()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range gen {
		if s.Name == "rich.pte" {
			return s.Data
		}
	}
	t.Fatal("no rich.pte")
	return nil
}

// TestAdversarial builds hostile programs by patching one field of a valid
// one: offsets and sizes that overflow uint64 (and int on 32-bit), vectors
// claiming 2^31 elements, offsets that loop back, unknown union tags,
// strings without terminators, segments overlapping the header, numel ×
// element size overflowing, negative dims, reserved scalar types. Each must
// be rejected with a pte *FormatError naming the field, within the sweep's
// time and allocation bounds.
func TestAdversarial(t *testing.T) {
	base := adversarialBase(t)
	if err := hostile.Case(t, pteTarget, "base", bytes.Clone(base)); err != nil {
		t.Fatalf("base program: %v", err)
	}
	tensor := func(fb hostile.FB, value int) int { // the Tensor table of values[value] of plan 0
		ev := fb.Path([2]int{progExecutionPlan, 0}, [2]int{planValues, value})
		return fb.Table(ev, evalVal)
	}
	cases := []struct {
		name  string
		patch func(fb hostile.FB)
		want  error  // sentinel
		field string // expected in the error text
	}{
		{"segment_base_offset near 2^64", func(fb hostile.FB) { fb.PutU64(24, 1<<64-8) }, format.ErrTruncated, "segment_base_offset"},
		{"program_size 2^63", func(fb hostile.FB) { fb.PutU64(16, 1<<63) }, format.ErrTruncated, "program_size"},
		{"segment_data_size 2^64-1", func(fb hostile.FB) { fb.PutU64(32, 1<<64-1) }, format.ErrMalformed, "segment_data_size"},
		{"segment_data_size wraps base+size", func(fb hostile.FB) { fb.PutU64(32, 1<<63-100) }, format.ErrMalformed, "segment_data_size"},
		{"segment offset 2^64-1", func(fb hostile.FB) {
			fb.PutU64(fb.MustField(fb.Path([2]int{progSegments, 2}), segOffset), 1<<64-1)
		}, format.ErrMalformed, "segments[2]"},
		{"segment size 2^63", func(fb hostile.FB) {
			fb.PutU64(fb.MustField(fb.Path([2]int{progSegments, 0}), segSize), 1<<63)
		}, format.ErrMalformed, "segments[0]"},
		{"segment offset past int32", func(fb hostile.FB) {
			fb.PutU64(fb.MustField(fb.Path([2]int{progSegments, 1}), segOffset), 1<<31+16)
		}, format.ErrMalformed, "segments[1]"},
		{"segment size 2^32 (int on 32-bit)", func(fb hostile.FB) {
			fb.PutU64(fb.MustField(fb.Path([2]int{progSegments, 1}), segSize), 1<<32)
		}, format.ErrMalformed, "segments[1]"},
		{"segments overlapping the header", func(fb hostile.FB) { fb.PutU64(24, 8) }, format.ErrMalformed, "segment_base_offset"},
		{"execution_plan claims 2^31 plans", func(fb hostile.FB) {
			p, _ := fb.Vector(fb.Root(), progExecutionPlan)
			fb.PutU32(p, 1<<31)
		}, format.ErrMalformed, "execution_plan"},
		{"values claims 2^31-1 values", func(fb hostile.FB) {
			p, _ := fb.Vector(fb.Path([2]int{progExecutionPlan, 0}), planValues)
			fb.PutU32(p, 1<<31-1)
		}, format.ErrMalformed, "values"},
		{"sizes claims 2^31 dims", func(fb hostile.FB) {
			p, _ := fb.Vector(tensor(fb, 0), tensorSizes)
			fb.PutU32(p, 1<<31)
		}, format.ErrMalformed, "sizes"},
		{"name length 2^32-1", func(fb hostile.FB) {
			fb.PutU32(fb.Table(fb.Path([2]int{progExecutionPlan, 0}), planName), 1<<32-1)
		}, format.ErrMalformed, "name"},
		{"name without terminator", func(fb hostile.FB) {
			s := fb.Table(fb.Path([2]int{progExecutionPlan, 0}), planName)
			n := int(fb.B[s]) | int(fb.B[s+1])<<8
			fb.PutU8(s+4+n, 'x')
		}, format.ErrMalformed, "name"},
		{"offset looping back (wraps in 32 bits)", func(fb hostile.FB) {
			p := fb.MustField(fb.Root(), progExecutionPlan)
			fb.PutU32(p, -uint32(p)) // p + off = 2^32: 0 if computed in 32 bits
		}, format.ErrMalformed, "execution_plan"},
		{"element offset to itself", func(fb hostile.FB) {
			p, _ := fb.Vector(fb.Root(), progExecutionPlan)
			fb.PutU32(p+4, 0)
		}, format.ErrMalformed, "execution_plan[0]"},
		{"vtable at an odd position", func(fb hostile.FB) {
			fb.PutU32(fb.Path([2]int{progExecutionPlan, 0}), 1)
		}, format.ErrMalformed, "execution_plan[0]"},
		{"vtable offset 2^31", func(fb hostile.FB) {
			fb.PutU32(fb.Path([2]int{progExecutionPlan, 0}), 1<<31)
		}, format.ErrMalformed, "execution_plan[0]"},
		{"root offset 0", func(fb hostile.FB) { fb.PutU32(0, 0) }, format.ErrMalformed, ""},
		{"root offset past the end", func(fb hostile.FB) { fb.PutU32(0, 1<<32-1) }, format.ErrMalformed, ""},
		{"unknown EValue tag 12", func(fb hostile.FB) {
			ev := fb.Path([2]int{progExecutionPlan, 0}, [2]int{planValues, 0})
			fb.PutU8(fb.MustField(ev, evalType), 12)
		}, format.ErrMalformed, "values[0]"},
		{"unknown EValue tag 255", func(fb hostile.FB) {
			ev := fb.Path([2]int{progExecutionPlan, 0}, [2]int{planValues, 0})
			fb.PutU8(fb.MustField(ev, evalType), 255)
		}, format.ErrMalformed, "values[0]"},
		{"unknown instruction tag 6", func(fb hostile.FB) {
			in := fb.Path([2]int{progExecutionPlan, 1}, [2]int{planChains, 0}, [2]int{chainInstructions, 0})
			fb.PutU8(fb.MustField(in, instrType), 6)
		}, format.ErrMalformed, "instructions[0]"},
		{"numel × element size overflows", func(fb hostile.FB) {
			p, n := fb.Vector(tensor(fb, 0), tensorSizes)
			for i := 0; i < n; i++ {
				fb.PutU32(p+4+4*i, 1<<31-1)
			}
		}, format.ErrMalformed, "sizes"},
		{"negative dim", func(fb hostile.FB) {
			p, _ := fb.Vector(tensor(fb, 0), tensorSizes)
			fb.PutU32(p+4, 1<<32-1)
		}, format.ErrMalformed, "sizes"},
		{"data_buffer_idx 2^32-1", func(fb hostile.FB) {
			fb.PutU32(fb.MustField(tensor(fb, 0), tensorDataBuffer), 1<<32-1)
		}, format.ErrMalformed, "data_buffer_idx"},
		{"mutable segment index 2^31", func(fb hostile.FB) {
			fb.PutU32(fb.MustField(fb.Path([2]int{progMutableSegs, 0}), subsegIndex), 1<<31)
		}, format.ErrMalformed, "mutable_data_segments[0]"},
		{"tensor list item 2^31-1", func(fb hostile.FB) {
			// values[8+8] is the TensorList {0, 1} (8 tensors, then Null, Int, ...)
			ev := fb.Path([2]int{progExecutionPlan, 0}, [2]int{planValues, 16})
			p, _ := fb.Vector(fb.Table(ev, evalVal), listItems)
			fb.PutU32(p+4, 1<<31-1)
		}, format.ErrMalformed, "items"},
	}
	for _, st := range []int8{8, 9, 10, 18, 19, 20, 21, 30, 127, -1, -128} {
		st := st
		cases = append(cases, struct {
			name  string
			patch func(fb hostile.FB)
			want  error
			field string
		}{fmt.Sprintf("scalar type %d", st), func(fb hostile.FB) {
			fb.PutU8(fb.MustField(tensor(fb, 0), tensorScalarType), uint8(st))
		}, format.ErrMalformed, "scalar_type"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := bytes.Clone(base)
			c.patch(hostile.FB{B: b})
			err := hostile.Case(t, pteTarget, c.name, b)
			if err == nil {
				t.Fatalf("opened")
			}
			var fe *format.FormatError
			if !errors.As(err, &fe) || !errors.Is(err, c.want) {
				t.Errorf("error %v (%T), want a *FormatError wrapping %v", err, err, c.want)
			}
			if !strings.Contains(err.Error(), c.field) {
				t.Errorf("error %q does not name %q", err, c.field)
			}
			t.Log(err)
		})
	}
}

// TestAdversarialSharedValues points every value of a plan at one tensor
// value with a 2,000-dimension sizes vector, as a FlatBuffer allows: a
// loader copying sizes per reference would allocate 2,000 × 2,000 × 8
// bytes for a file of some kilobytes. Open must stay within
// hostile.AllocFactor × the file size (here: reject it, naming where). Then
// 20,000 values sharing one unnamed scalar, which Open must accept within
// the same bound.
func TestAdversarialSharedValues(t *testing.T) {
	var fe *format.FormatError
	err := sharedValues(t, 2000, 2000, strings.Repeat("n", 1000))
	if !errors.As(err, &fe) || fe.Format != "pte" {
		t.Fatalf("error %v is not a pte *FormatError", err)
	}
	// the work budget's error names the table it stopped at
	if fe.Offset <= 0 || !strings.HasSuffix(fe.Field, ".val.sizes") {
		t.Errorf("error at field %q, offset %d: want a tensor's sizes at its table's offset", fe.Field, fe.Offset)
	}
	// The other extreme: a scalar without a name shared 20,000 times. Each
	// value is a tensor of its own (records, list entry, made-up name) for
	// 20 bytes of file. hostile.Case bounds Open and the exerciser
	// together; the loader's own share, Open plus the tensor list and the
	// name index, is measured alone below.
	if err := sharedValues(t, 0, 20000, ""); err != nil {
		t.Fatalf("20,000 values sharing a scalar: %v (a valid program)", err)
	}
	// The same with a method name of 10,000 bytes: every unnamed tensor's
	// made-up name ("<method>/values/<i>") repeats it, 200 MB of names for
	// a file of 420 KB unless Open charges them.
	b := sharedFile(t, 0, 20000, "", strings.Repeat("m", 10000))
	err = hostile.Case(t, pteTarget, "shared value, long method name", b)
	t.Logf("long method name: Open: %v", err)
}

// TestAdversarialSharedScalarAlloc measures the heap bytes the loader
// itself allocates for the 20,000 values sharing one scalar tensor: Open,
// the tensor list and a name lookup (which builds the index). It must stay
// under hostile.AllocFactor × the file size.
func TestAdversarialSharedScalarAlloc(t *testing.T) {
	b := sharedFile(t, 0, 20000, "", "forward")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p, err := pte.NewFile(mmapfile.NewBytes(b))
	if err != nil {
		t.Fatal(err)
	}
	ts := p.Tensors()
	_, ok := p.Tensor(ts[len(ts)-1].Name)
	runtime.ReadMemStats(&after)
	if !ok || len(ts) != 20000 {
		t.Fatalf("%d tensors, last found %v; want 20000, true", len(ts), ok)
	}
	used := after.TotalAlloc - before.TotalAlloc
	ratio := float64(used) / float64(len(b))
	t.Logf("%d bytes for %d tensors from a %d-byte file: %.1f× the file, %.0f bytes a tensor", used, len(ts), len(b), ratio, float64(used)/float64(len(ts)))
	if ratio > hostile.AllocFactor {
		t.Errorf("the loader allocated %.1f× the file; the bound is %d×", ratio, hostile.AllocFactor)
	}
}

func sharedValues(t *testing.T, rank, values int, name string) error {
	b := sharedFile(t, rank, values, name, "forward")
	err := hostile.Case(t, pteTarget, "shared value", b)
	t.Logf("Open: %v", err)
	return err
}

// sharedFile builds a program whose values all point at value 0, a tensor
// of the given rank (every dimension 1) and name, in a method of the given
// name.
func sharedFile(t *testing.T, rank, values int, name, method string) []byte {
	sizes := make([]int32, rank)
	for i := range sizes {
		sizes[i] = 1
	}
	m := writer.PTEMethod{Name: method, Tensors: []writer.PTETensor{
		{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: sizes, NoDimOrder: true, Name: name, Data: make([]byte, 4)},
	}}
	for i := 1; i < values; i++ {
		m.Values = append(m.Values, writer.PTEValue{Kind: writer.PTENull})
	}
	b, err := (&writer.PTE{Methods: []writer.PTEMethod{m}}).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	fb := hostile.FB{B: b}
	vec, n := fb.Vector(fb.Path([2]int{progExecutionPlan, 0}), planValues)
	target := fb.Deref(vec + 4)
	patched := 0
	for i := 1; i < n; i++ {
		if slot := vec + 4 + 4*i; target > slot {
			fb.PutU32(slot, uint32(target-slot))
			patched++
		}
	}
	if patched < values/2 {
		t.Fatalf("only %d values point at value 0", patched)
	}
	t.Logf("%d values sharing one tensor value (sizes of %d dims): %d-byte file", patched+1, rank, len(b))
	return b
}
