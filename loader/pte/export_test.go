package pte

import (
	"fmt"
	"strings"

	"github.com/edgeload/edgeload/internal/schema/ptefb"
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
