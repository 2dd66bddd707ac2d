package loadercheck_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/hostile/ptdcheck"
	"github.com/edgeload/edgeload/internal/testkit/hostile/ptecheck"
	"github.com/edgeload/edgeload/internal/testkit/hostile/rtencheck"
	"github.com/edgeload/edgeload/internal/testkit/loadercheck"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/mmapfile"
)

// laidOut is a file the writer made and the end of its header and
// FlatBuffer region as the writer laid it out.
type laidOut struct {
	data []byte
	end  int64
}

// planned returns the generated files the writer's Tiny fixtures make, by
// name, with the region ends the writer reports: values RegionEnd's
// parsers do not compute.
func planned(t *testing.T) map[string]laidOut {
	t.Helper()
	out := map[string]laidOut{}
	for name, w := range map[string]*writer.PTE{"tiny.pte": writer.TinyPTE(), "tiny-external.pte": writer.TinyExternalPTE()} {
		info, err := w.Plan()
		if err != nil {
			t.Fatal(err)
		}
		b, err := w.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		out[name] = laidOut{b, info.ProgramSize}
	}
	ptd := writer.TinyPTD()
	info, err := ptd.Plan()
	if err != nil {
		t.Fatal(err)
	}
	b, err := ptd.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	out["tiny.ptd"] = laidOut{b, int64(info.FlatBufferOffset + info.FlatBufferSize)}
	for name, v1 := range map[string]bool{"tiny-v2.rten": false, "tiny-v1.rten": true} {
		b, info, err := writer.TinyRTen(v1).Bytes()
		if err != nil {
			t.Fatal(err)
		}
		out[name] = laidOut{b, info.ModelOffset + info.ModelLen}
	}
	return out
}

// Every generated file opens through loader.NewBytes as the format its
// name says, and passes the exercise; RegionEnd finds the end of the
// region the writer laid out (for the files whose layout it reports).
func TestGeneratedFilesOpen(t *testing.T) {
	want := planned(t)
	compared := 0
	for _, gen := range []func() ([]hostile.Seed, error){ptecheck.Generated, ptdcheck.Generated, rtencheck.Generated} {
		seeds, err := gen()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range seeds {
			m, err := loader.New(mmapfile.NewBytes(s.Data))
			if err != nil {
				t.Errorf("%s: %v", s.Name, err)
				continue
			}
			if !strings.HasSuffix(s.Name, "."+m.Format().String()) {
				t.Errorf("%s opened as %v", s.Name, m.Format())
			}
			if err := loadercheck.Model(m); err != nil {
				t.Errorf("%s: %v", s.Name, err)
			}
			end, err := loadercheck.RegionEnd(s.Data)
			if err != nil || end <= 8 || end > int64(len(s.Data)) {
				t.Errorf("%s: RegionEnd = %d, %v", s.Name, end, err)
			}
			if w, ok := want[s.Name]; ok {
				compared++
				if !bytes.Equal(w.data, s.Data) {
					t.Errorf("%s: the generated file is not the writer's fixture", s.Name)
				} else if end != w.end {
					t.Errorf("%s: RegionEnd = %d, the writer laid the region out to %d", s.Name, end, w.end)
				}
			}
			t.Logf("%s: %d bytes, FlatBuffer region %d, %d tensors, %d segments", s.Name, len(s.Data), end, len(m.Tensors()), len(m.Segments()))
			m.Close()
		}
	}
	if compared != len(want) {
		t.Errorf("compared RegionEnd with the writer's layout for %d files, want %d", compared, len(want))
	}
}
