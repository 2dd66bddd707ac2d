package pte

import (
	"bytes"
	"fmt"
	"slices"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
)

// CheckVerified checks that a program that opened (p, openErr nil) and
// whose methods all check passes a full verification of its FlatBuffer
// (every table, instructions included, in one walk): deferring the
// instructions to each method's first use must skip nothing.
//
// It also opens data again without the fast path of the tensor checks
// (quick.go) and checks that the outcome is the same: the error, or the
// tensor records, the external count and the work budget left.
func CheckVerified(data []byte, p *Program, openErr error) error {
	if err := checkQuick(data, p, openErr); err != nil {
		return err
	}
	if openErr != nil {
		return nil
	}
	merr := p.VerifyMethods()
	full := fullVerify(p.fb)
	if full != nil && merr == nil {
		return fmt.Errorf("opened and checked a program the full verification rejects: %v", full)
	}
	return nil
}

func checkQuick(data []byte, p *Program, openErr error) error {
	q, err := NewFile(mmapfile.NewBytes(data), func(o *options) { o.noQuick = true })
	if (err == nil) != (openErr == nil) || err != nil && err.Error() != openErr.Error() {
		return fmt.Errorf("Open with the fast tensor checks: %v; without them: %v", openErr, err)
	}
	if err != nil {
		return nil
	}
	defer q.Close()
	if !slices.Equal(p.recs, q.recs) || p.external != q.external || p.checks.budget != q.checks.budget {
		return fmt.Errorf("the fast tensor checks made %d records (%d external, budget left %d), the slow ones %d (%d, %d)",
			len(p.recs), p.external, p.checks.budget, len(q.recs), q.external, q.checks.budget)
	}
	return nil
}

// fullVerify verifies the whole FlatBuffer fb, instructions included, in
// one walk.
func fullVerify(fb []byte) error {
	return fbverify.NewWalk(fb, fbverify.Options{Format: formatName}).Verify("Program", ptefb.VerifyProgram)
}

// MethodsBuilt reports whether p's Method values have been built.
func MethodsBuilt(p *Program) bool { return p.methods != nil }

// TensorListBuilt reports whether p's tensor list has been built.
func TensorListBuilt(p *Program) bool { return p.list.tensors != nil }

// WithLimits sets the object limit and the work budget (each 0: the
// default), so that tests can put each bound anywhere.
func WithLimits(maxObjects int, budget int64) Option {
	return func(o *options) { o.maxObjects, o.budget = maxObjects, budget }
}

// ListMatchesAccessors checks p's tensor list, which buildList reads with
// its own vtable cache (tensors.go), against the FlatBuffers generated
// accessors reading every record's Tensor table: shape, dim order, name,
// scalar type, requires_grad and data_buffer_idx.
func ListMatchesAccessors(p *Program) error {
	ts := p.Tensors()
	if len(ts) != len(p.recs) {
		return fmt.Errorf("%d tensors, %d records", len(ts), len(p.recs))
	}
	var x ptefb.Tensor
	var eti ptefb.ExtraTensorInfo
	for i := range ts {
		t := &ts[i]
		x.Init(p.fb, flatbuffers.UOffsetT(p.recs[i].tensor))
		shape := make([]int64, x.SizesLength())
		for k := range shape {
			shape[k] = int64(x.Sizes(k))
		}
		var name []byte
		if x.ExtraTensorInfo(&eti) != nil {
			name = eti.FullyQualifiedName()
		}
		var dbi uint32
		if t.Location != format.LocExternal {
			dbi = x.DataBufferIdx()
		}
		switch {
		case !slices.Equal(t.Shape, shape) || t.Shape == nil:
			return fmt.Errorf("tensor %d: shape %v, the accessors read %v", i, t.Shape, shape)
		case !bytes.Equal(t.DimOrder, x.DimOrderBytes()) || len(t.DimOrder) == 0 && t.DimOrder != nil:
			return fmt.Errorf("tensor %d: dim order %v, the accessors read %v", i, t.DimOrder, x.DimOrderBytes())
		case len(name) > 0 && (t.Name != string(name) || !t.NameExplicit):
			return fmt.Errorf("tensor %d: name %q (explicit %v), the accessors read %q", i, t.Name, t.NameExplicit, name)
		case len(name) == 0 && (t.Name != fmt.Sprintf("%s/values/%d", t.Method, t.Value) || t.NameExplicit):
			return fmt.Errorf("tensor %d: name %q (explicit %v) for value %d of %s without a name", i, t.Name, t.NameExplicit, t.Value, t.Method)
		case t.ScalarType != x.ScalarType() || t.RequiresGrad != x.RequiresGrad() || t.DataBufferIndex != dbi:
			return fmt.Errorf("tensor %d: scalar type %d, requires_grad %v, data_buffer_idx %d; the accessors read %d, %v, %d",
				i, t.ScalarType, t.RequiresGrad, t.DataBufferIndex, x.ScalarType(), x.RequiresGrad(), dbi)
		}
		if k, ok := p.ValueTensor(t.Method, t.Value); !ok || k != t {
			return fmt.Errorf("tensor %d: TensorAt(%q, %d) is not it", i, t.Method, t.Value)
		}
	}
	return nil
}
