package ptd_test

import (
	"strconv"
	"testing"

	"github.com/edgeload/edgeload/mmapfile"

	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/ptd"
)

// manyKeys builds a current file with n tensors and n/4 blobs, and a legacy
// one with n tensors.
func manyKeys(tb testing.TB, n int, legacy bool) (*ptd.File, []string) {
	var entries []writer.PTDEntry
	var keys []string
	for i := range n {
		k := "model.layers." + strconv.Itoa(i) + ".weight"
		keys = append(keys, k)
		entries = append(entries, writer.PTDEntry{Key: k, Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{4, 4}}})
		if i%4 == 0 {
			k := "blob/" + strconv.Itoa(i)
			keys = append(keys, k)
			entries = append(entries, writer.PTDEntry{Key: k, Size: 7})
		}
	}
	b, err := (&writer.PTD{Legacy: legacy, Entries: entries}).Bytes()
	if err != nil {
		tb.Fatal(err)
	}
	f, err := ptd.NewFile(mmapfile.NewBytes(b))
	if err != nil {
		tb.Fatal(err)
	}
	return f, keys
}

func TestLookupAllocs(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		f, keys := manyKeys(t, 200, legacy)
		defer f.Close()
		i := 0
		var sink ptd.NamedData
		allocs := testing.AllocsPerRun(1000, func() {
			e, ok := f.Entry(keys[i%len(keys)])
			if !ok {
				panic("missing key " + keys[i%len(keys)])
			}
			sink = e
			i++
		})
		if allocs != 0 {
			t.Errorf("legacy %v: Lookup allocates %v times per call", legacy, allocs)
		}
		miss := testing.AllocsPerRun(1000, func() {
			if _, ok := f.Entry("model.layers.nope.weight"); ok {
				panic("found a missing key")
			}
		})
		if miss != 0 {
			t.Errorf("legacy %v: a missed Lookup allocates %v times", legacy, miss)
		}
		if sink.Key == "" {
			t.Error("no lookup ran")
		}
	}
}

func BenchmarkLookup(b *testing.B) {
	f, keys := manyKeys(b, 1000, false)
	defer f.Close()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := f.Entry(keys[i%len(keys)]); !ok {
			b.Fatal("missing key")
		}
		i++
	}
}

func BenchmarkOpen1000(b *testing.B) {
	var entries []writer.PTDEntry
	for i := range 1000 {
		entries = append(entries, writer.PTDEntry{Key: "w" + strconv.Itoa(i), Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{64, 64}}})
	}
	raw, err := (&writer.PTD{Entries: entries}).Bytes()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		f, err := ptd.NewFile(mmapfile.NewBytes(raw))
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}
