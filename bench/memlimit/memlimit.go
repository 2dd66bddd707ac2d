// Package memlimit shows, in a reproducible run, that edgeload reads a model
// larger than the memory it is allowed to use.
//
// TestMemLimit (in this package's tests) writes a 4 GiB ExecuTorch program
// of 1024 float32 tensors with the project's writer, then runs a child
// program (./child, built without the race detector) inside a memory cgroup
// with a hard 256 MiB limit. The child opens the file, reads every tensor
// once in order, sums it and checks the sum against the value computed from
// the fill pattern below, releasing each tensor after use. The same child
// with the os.ReadFile baseline runs under the same limit, and the test
// reports both outcomes with wall time, peak RSS and the cgroup's peak
// usage. See MEMLIMIT.md at the repository root for the measured table and
// what each number means.
//
// This file holds what the test and the child share: the model's shape, the
// deterministic fill pattern and its expected sums, and the child's report.
package memlimit

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// The model the test writes: Tensors float32 tensors of TensorElems
// elements each (4 MiB), 4 GiB of tensor data in all.
const (
	Tensors     = 1024
	TensorElems = 1 << 20
	TensorBytes = TensorElems * 4
)

// period is the period of the fill pattern; prime, so that neighbouring
// tensors (which start at different phases) have different sums.
const period = 251

// phaseStep is how far the pattern's phase advances from one tensor to the
// next.
const phaseStep = 7

// TensorName returns the fully-qualified name of tensor i.
func TensorName(i int) string { return fmt.Sprintf("layers.%04d.weight", i) }

// Value returns element j of tensor i: an integer in [0, period) stored as a
// float32, so that every sum of a tensor is exact in float64.
func Value(i, j int) float32 { return float32(phase(i, j)) }

func phase(i, j int) int { return (j + phaseStep*i) % period }

// patternBytes holds two periods of the pattern's little-endian encoding,
// so that any run of up to one period can be copied from it.
var patternBytes = func() []byte {
	b := make([]byte, 2*period*4)
	for k := range 2 * period {
		binary.LittleEndian.PutUint32(b[4*k:], math.Float32bits(float32(k%period)))
	}
	return b
}()

// Fill writes bytes [off, off+len(p)) of tensor i's little-endian float32
// data into p. It has the signature the writer's Fill callback takes (after
// binding i) and is cheap: it copies from a precomputed period.
func Fill(i int, p []byte, off int64) {
	for len(p) > 0 {
		j := int(off / 4)
		k := int(off % 4)                                  // byte inside element j
		start := 4*phase(i, j) + k                         // position in patternBytes
		n := copy(p, patternBytes[start:start+4*period-k]) // at most one period
		p = p[n:]
		off += int64(n)
	}
}

// ExpectedSum returns the sum of tensor i's TensorElems values, computed
// from the pattern (not by reading the file).
func ExpectedSum(i int) float64 {
	const full = TensorElems / period
	const rest = TensorElems % period
	sum := int64(full) * (period - 1) * period / 2
	for j := range rest {
		sum += int64(phase(i, full*period+j))
	}
	return float64(sum)
}

// Sum adds v in float64. Each value is an integer below period, so the sum
// of a tensor is exact.
func Sum(v []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(v); i += 4 {
		s0 += float64(v[i])
		s1 += float64(v[i+1])
		s2 += float64(v[i+2])
		s3 += float64(v[i+3])
	}
	for ; i < len(v); i++ {
		s0 += float64(v[i])
	}
	return s0 + s1 + s2 + s3
}

// The child's modes.
const (
	// ModePlain maps the file with edgeload, reads each tensor through its
	// zero-copy float32 view (pages fault in on first touch) and releases it.
	ModePlain = "plain"
	// ModePrefetch is ModePlain with prefetch-ahead: while tensor i is being
	// summed, a second goroutine prefetches tensor i+1 (MADV_POPULATE_READ).
	ModePrefetch = "prefetch"
	// ModeReadFile is the baseline a Go user would write: os.ReadFile the
	// whole file, then parse it from memory (pte.NewFile over mmapfile.NewBytes) and sum.
	ModeReadFile = "readfile"
)

// Report is what the child prints, as one JSON line on stdout, when it
// finishes (a child killed by the kernel prints nothing).
type Report struct {
	Mode        string
	Tensors     int     // tensors read and checked
	Bytes       int64   // tensor bytes read
	Mismatches  int     // tensors whose sum differed from ExpectedSum
	FirstBad    string  // the first mismatch, described
	Checksum    float64 // sum of all tensor sums
	Open        time.Duration
	Read        time.Duration // from the first tensor read to the last release
	MaxRSS      int64         // largest RSS the child sampled (memstat), bytes
	MaxRSSAnon  int64         // anonymous part of that sample
	FinalRSS    int64         // RSS after the last release
	VmHWM       int64         // peak RSS of the process (/proc/self/status VmHWM), bytes
	MappingMode string        // the mmapfile mode used ("whole" for edgeload modes)
	Err         string        // set when the child failed without being killed
}
