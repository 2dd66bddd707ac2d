package hostile

import (
	"encoding/binary"
	"flag"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
)

// Seed is a model file used as a sweep input or fuzz seed.
type Seed struct {
	Name string
	Data []byte
}

// Real returns the real files of ../shared/models/<sub> ("pte", "ptd",
// "rten"), sorted by name, read at test time (they are never copied into
// the repository). It returns nothing when the folder is absent: callers
// that require the files use testmodels.Dir first.
func Real(sub string) []Seed {
	m, _ := filepath.Glob(filepath.Join(testmodels.Root(), "..", "shared", "models", sub, "*"))
	sort.Strings(m)
	var out []Seed
	for _, p := range m {
		if !testmodels.IsModel(p) {
			continue
		}
		if b, err := os.ReadFile(p); err == nil {
			out = append(out, Seed{Name: sub + "/" + filepath.Base(p), Data: b})
		}
	}
	return out
}

// MaxFuzzSeed is the largest real file a fuzz target hands the fuzzing
// engine as a seed. A mutation of a multi-megabyte file costs milliseconds
// (copy, coverage, every view checked), and minimising one that finds new
// coverage runs the worker for many seconds without a report: the real
// ocrs (2.5 MB) and stories260k (1.3 MB) files turned a 15-second CI run
// into a few hundred executions. The plain test run (no -fuzz) still runs
// every real file through the fuzz invariants, and TestRealFiles checks
// them against their expected values.
const MaxFuzzSeed = 256 << 10

// Fuzzing reports whether the test binary runs the fuzzing engine (-fuzz
// given), as opposed to running the seed corpus as tests.
func Fuzzing() bool {
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

// RealSeeds returns the contents of Real(sub) for a fuzz target's seed
// corpus: under the fuzzing engine, without the files larger than
// MaxFuzzSeed; run as tests, all of them.
func RealSeeds(sub string) [][]byte {
	var out [][]byte
	for _, s := range Real(sub) {
		if Fuzzing() && len(s.Data) > MaxFuzzSeed {
			continue
		}
		out = append(out, s.Data)
	}
	return out
}

// F32 returns vs as little-endian float32 bytes, the data of the
// generated files' float tensors.
func F32(vs ...float32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// SmallFile is the size up to which a sweep tries every truncation length
// of a file; larger files are swept over their header and FlatBuffer
// region only (truncations inside it, and a sample past it).
const SmallFile = 60 << 10

// MaxRegionOffsets bounds the offsets a sweep mutates in one file: a
// larger FlatBuffer region is sampled with the step that brings it under
// the bound (and the sweep logs the step).
const MaxRegionOffsets = 32 << 10

// LargeFileBudget bounds the work of a sweep over a file larger than
// SmallFile: its offsets are sampled so that offsets × file size stays
// under it (every case reads the whole file a few times: checksums of
// every view). For the real files: about 1,200 offsets of mnist (109 KB),
// 100 of stories260k (1.3 MB), 64 of ocrs (2.5 MB).
const LargeFileBudget = 128 << 20

// SweepFiles returns the sweep inputs for the real files of
// ../shared/models/<sub> (none when sub is "") and the generated seeds
// gen: each file's header and FlatBuffer region to mutate, whose end
// regionEnd returns for a valid file (each format's check package has
// one: ptecheck.RegionEnd, ptdcheck.RegionEnd, rtencheck.RegionEnd), and
// its truncation lengths (all of them for a file up to SmallFile bytes).
// Under CI=true the real files must be there.
func SweepFiles(tb testing.TB, sub string, gen []Seed, regionEnd func([]byte) (int64, error)) []File {
	tb.Helper()
	var real []Seed
	if sub != "" {
		real = Real(sub)
		if len(real) == 0 && os.Getenv("CI") == "true" {
			testmodels.Dir(tb) // fails, saying where the files were expected
		}
	}
	var out []File
	for _, s := range append(real, gen...) {
		n := int64(len(s.Data))
		end, err := regionEnd(s.Data)
		if err != nil {
			// a real file that must not open (a bundled program): sweep
			// its first KiB, where every check lives
			end = min(n, 1024)
		}
		f := File{Name: s.Name, Data: s.Data, Mutate: []Range{{0, end}}}
		if n > SmallFile {
			// truncations inside the region, then 64 spread over the rest
			// and the last 8 bytes
			f.Truncate = []Range{{0, end + 1}}
			for i := int64(1); i <= 64; i++ {
				l := end + (n-end)*i/65
				f.Truncate = append(f.Truncate, Range{l, l + 1})
			}
			f.Truncate = append(f.Truncate, Range{n - 8, n})
		}
		budget := int64(MaxRegionOffsets)
		if n > SmallFile {
			budget = min(budget, max(LargeFileBudget/n, 64))
		}
		if end > budget {
			f.Step = int((end + budget - 1) / budget)
		}
		out = append(out, f)
	}
	return out
}
