package safetensors_test

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/loader/safetensors"
	"github.com/edgeload/edgeload/mmapfile"
)

// TestAllocationProportional opens headers made of the smallest entries,
// of long shapes and of the smallest metadata entries: NewFile allocates
// no more than the hostile sweeps allow (hostile.AllocFactor × the file).
func TestAllocationProportional(t *testing.T) {
	small := func(n int) string {
		var sb strings.Builder
		sb.WriteString("{")
		for i := range n {
			if i > 0 {
				sb.WriteString(",")
			}
			sb.WriteString(`"` + strconv.Itoa(i) + `":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}`)
		}
		return sb.String() + "}"
	}
	dims := `{"a":{"dtype":"U8","shape":[` + strings.Repeat("1,", 200_000) + `0],"data_offsets":[0,0]}}`
	meta := `{"__metadata__":{` + func() string {
		var sb strings.Builder
		for i := range 50_000 {
			if i > 0 {
				sb.WriteString(",")
			}
			sb.WriteString(`"` + strconv.Itoa(i) + `":""`)
		}
		return sb.String()
	}() + `}}`
	for name, h := range map[string]string{"small entries": small(20_000), "long shape": dims, "metadata": meta} {
		b := mk(h, nil)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f, err := safetensors.NewFile(mmapfile.NewBytes(b))
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_ = f
		ratio := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(b))
		t.Logf("%s: %d-byte header, %.1f× allocated", name, len(b), ratio)
		if ratio > hostile.AllocFactor {
			t.Errorf("%s: allocated %.1f× the header", name, ratio)
		}
	}
}
