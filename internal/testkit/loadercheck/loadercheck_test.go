package loadercheck_test

import (
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/hostile/ptdcheck"
	"github.com/edgeload/edgeload/internal/testkit/hostile/ptecheck"
	"github.com/edgeload/edgeload/internal/testkit/hostile/rtencheck"
	"github.com/edgeload/edgeload/internal/testkit/loadercheck"
	"github.com/edgeload/edgeload/loader"
)

// Every generated file opens through loader.NewBytes as the format its
// name says, and passes the exercise; RegionEnd finds the end of the
// region loader opened.
func TestGeneratedFilesOpen(t *testing.T) {
	for _, gen := range []func() ([]hostile.Seed, error){ptecheck.Generated, ptdcheck.Generated, rtencheck.Generated} {
		seeds, err := gen()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range seeds {
			m, err := loader.NewBytes(s.Data)
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
			var want int64
			switch {
			case m.Program() != nil:
				want = m.Program().Header().ProgramSize
			case m.DataFile() != nil:
				want = m.DataFile().Header().FlatBufferLen()
			default:
				want = m.RTen().Header().ModelOffset + m.RTen().Header().ModelLen
			}
			if end != want {
				t.Errorf("%s: RegionEnd = %d, the region opened through loader ends at %d", s.Name, end, want)
			}
			t.Logf("%s: %d bytes, FlatBuffer region %d, %d tensors, %d segments", s.Name, len(s.Data), end, len(m.Tensors()), len(m.Segments()))
			m.Close()
		}
	}
}
