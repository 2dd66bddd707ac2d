package pte

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/fbverify"
)

// CheckFastPath checks that opening data (which gave openErr) agreed with
// a full generic verification of its FlatBuffer: the fast values path
// (fastvalue.go) must accept nothing the generic walk rejects, never
// reject what it accepts, and every structural error must be the one the
// generic walk reports.
func CheckFastPath(data []byte, openErr error) error {
	head := data[:min(len(data), headerPeek)]
	hdr, err := parseHeader(head, int64(len(data)))
	if err != nil || hdr.ProgramSize > int64(len(data)) {
		return nil // not as far as the FlatBuffer
	}
	fb := data[:hdr.ProgramSize]
	vo := fbverify.Options{Format: formatName}
	if fbverify.Verify(fb, descProgramVersion, vo) != nil || ptefb.GetRootAsProgram(fb, 0).Version() != 0 {
		return nil
	}
	full := fbverify.Verify(fb, descProgram, vo)
	switch {
	case openErr != nil && strings.Contains(openErr.Error(), "disagrees"):
		return fmt.Errorf("the fast path rejected what the generic walk accepts: %v", openErr)
	case full != nil && openErr == nil:
		return fmt.Errorf("opened a program the generic walk rejects: %v", full)
	case full != nil && openErr.Error() != full.Error():
		return fmt.Errorf("error %q, want the generic walk's %q", openErr, full)
	}
	return nil
}

// TensorListBuilt reports whether p's tensor list has been built.
func TensorListBuilt(p *Program) bool { return p.list.tensors != nil }

// WithPerWorker sets the least number of values a worker of Open takes
// (parallel.go), so that tests read small plans in parallel.
func WithPerWorker(n int) Option {
	return func(o *options) { o.perWorker = n }
}

// WithoutLane makes Open read every value the general way, not the lane
// way (lane.go), so that tests can compare the two.
func WithoutLane() Option {
	return func(o *options) { o.noLane = true }
}

// WithGoLane makes Open read the lane's values with its Go loop where it
// has one in assembly (lane_amd64.s), so that tests can compare the two.
func WithGoLane() Option {
	return func(o *options) { o.goLane = true }
}

// LaneAsm reports whether the lane has an assembly loop on this platform.
const LaneAsm = laneAsm

// WithReaderBuffer gives the values' reader (the lane and the fast path)
// buf's copy of the FlatBuffer, which it frees once Open is done with it,
// so that tests can place the buffer against unreadable pages.
func WithReaderBuffer(buf func([]byte) ([]byte, func())) Option {
	return func(o *options) { o.readerBuf = buf }
}

// WithLimits sets the object limit, the work budget and where the values'
// reader sees the FlatBuffer end (each 0: the default), so that tests can
// put each bound anywhere.
func WithLimits(maxObjects int, budget int64, cut int) Option {
	return func(o *options) { o.maxObjects, o.budget, o.cut = maxObjects, budget, cut }
}

// LaneValues returns the number of values Open has read the lane way.
func LaneValues() int64 { return laneValues.Load() }

// ParallelReads returns the number of plans Open has read in parallel.
func ParallelReads() int64 { return parallelReads.Load() }

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
		if k, ok := p.TensorAt(t.Method, t.Value); !ok || k != t {
			return fmt.Errorf("tensor %d: TensorAt(%q, %d) is not it", i, t.Method, t.Value)
		}
	}
	return nil
}
