package writer_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/edgeload/edgeload/formats" // every built-in format
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/loader/rten"
)

var updateFixtures = flag.Bool("update-fixtures", false, "rewrite testdata/ with the fixtures the writer produces (go generate ./internal/writer)")

// fixtureDir is testdata/ at the repository root.
func fixtureDir() string { return filepath.Join(testmodels.Root(), "testdata") }

// TestFixturesUpToDate checks that every committed fixture is byte-identical
// to what the writer produces now, and that no stray model file sits in
// testdata/. With -update-fixtures it rewrites them instead.
func TestFixturesUpToDate(t *testing.T) {
	fx, err := writer.Fixtures()
	if err != nil {
		t.Fatal(err)
	}
	if *updateFixtures {
		if err := os.MkdirAll(fixtureDir(), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range fx {
			if err := os.WriteFile(filepath.Join(fixtureDir(), f.Name), f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote testdata/%s (%d bytes)", f.Name, len(f.Data))
		}
	}
	want := map[string]bool{}
	for _, f := range fx {
		want[f.Name] = true
		got, err := os.ReadFile(filepath.Join(fixtureDir(), f.Name))
		if err != nil {
			t.Errorf("testdata/%s: %v (run go generate ./internal/writer)", f.Name, err)
			continue
		}
		if !bytes.Equal(got, f.Data) {
			t.Errorf("testdata/%s is stale: %d bytes committed, the writer now gives %d different ones (run go generate ./internal/writer)", f.Name, len(got), len(f.Data))
		}
		if len(f.Data) > 4096 {
			t.Errorf("testdata/%s is %d bytes; fixtures stay at a few KB", f.Name, len(f.Data))
		}
	}
	ents, err := os.ReadDir(fixtureDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if testmodels.IsModel(e.Name()) && !want[e.Name()] {
			t.Errorf("testdata/%s is not a fixture the writer produces: remove it or add it to writer.Fixtures", e.Name())
		}
	}
}

// Second run is deterministic: two calls give the same bytes.
func TestFixturesDeterministic(t *testing.T) {
	a, err := writer.Fixtures()
	if err != nil {
		t.Fatal(err)
	}
	b, err := writer.Fixtures()
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != len(b) || len(a) < 5 {
		t.Fatalf("%d and %d fixtures", len(a), len(b))
	}
	for i := range a {
		if a[i].Name != b[i].Name || !bytes.Equal(a[i].Data, b[i].Data) {
			t.Errorf("fixture %s differs between two runs", a[i].Name)
		}
	}
}

// TestFixturesContent opens each fixture with loader.Open and checks what
// the fixture is meant to exercise.
func TestFixturesContent(t *testing.T) {
	dir := fixtureDir()
	open := func(name string, opts ...loader.Option) *loader.Model {
		t.Helper()
		m, err := loader.Open(filepath.Join(dir, name), opts...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(func() { m.Close() })
		if _, err := m.Verify(); err != nil {
			t.Errorf("%s: verify: %v", name, err)
		}
		return m
	}
	wantF32 := func(m *loader.Model, name string, want []float32) {
		t.Helper()
		tn, ok := m.Tensor(name)
		if !ok {
			t.Errorf("%s: no tensor %q", m.Name(), name)
			return
		}
		got, _, err := tn.Data.Float32()
		if err != nil || len(got) != len(want) {
			t.Errorf("%s %s: %v, %v", m.Name(), name, got, err)
			return
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s %s[%d] = %v, want %v", m.Name(), name, i, got[i], want[i])
			}
		}
	}
	weight := []float32{0.5, 0.75, 1, 1.25, 1.5, 1.75}
	bias := []float32{0.1, 0.2, 0.3}

	m := open("tiny.pte")
	if m.Format() != "pte" || len(m.Tensors()) != 3 || len(m.NamedData()) != 1 || len(as[*pte.Program](m).Delegates()) != 1 {
		t.Errorf("tiny.pte: %s, %d tensors, %d named data, %d delegates", m.Format(), len(m.Tensors()), len(m.NamedData()), len(as[*pte.Program](m).Delegates()))
	}
	wantF32(m, "linear.weight", weight)
	wantF32(m, "linear.bias", bias)
	wantF32(m, "forward/values/2", []float32{2})
	if d := as[*pte.Program](m).Delegates(); len(d) == 1 {
		b, _ := d[0].Data.Bytes()
		if d[0].ID != "XnnpackBackend" || d[0].SegmentIndex < 0 || !bytes.HasPrefix(b, []byte("XN00")) {
			t.Errorf("tiny.pte delegate: %+v %q", d[0], b)
		}
	}
	for i, s := range m.Segments() {
		if s.Offset()%128 != 0 {
			t.Errorf("tiny.pte segment %d at %d: not 128-aligned", i, s.Offset())
		}
	}

	m = open("tiny-external.pte")
	for _, tn := range m.Tensors() {
		if tn.Location != format.LocExternal || tn.Resolved() {
			t.Errorf("tiny-external.pte %s: %s resolved=%v", tn.Name, tn.Location, tn.Resolved())
		}
	}
	m = open("tiny-external.pte", loader.WithData(filepath.Join(dir, "tiny.ptd")))
	wantF32(m, "linear.weight", weight)
	wantF32(m, "linear.bias", bias)
	if tn, ok := m.Tensor("linear.bias"); !ok || tn.DataFile != filepath.Join(dir, "tiny.ptd") {
		t.Errorf("linear.bias not resolved through tiny.ptd: %+v", tn)
	}

	m = open("tiny.ptd")
	if m.Format() != "ptd" || as[*ptd.File](m).Legacy() || len(m.NamedData()) != 2 {
		t.Errorf("tiny.ptd: %s legacy=%v named=%d", m.Format(), as[*ptd.File](m).Legacy(), len(m.NamedData()))
	}
	wantF32(m, "linear.weight", weight)

	for _, name := range []string{"tiny-v2.rten", "tiny-v1.rten"} {
		m = open(name)
		v := as[*rten.Model](m).Header().Version
		if m.Format() != "rten" || (name == "tiny-v2.rten") != (v == 2) {
			t.Errorf("%s: %s version %d", name, m.Format(), v)
		}
		wantF32(m, "linear.weight", weight)
		wantF32(m, "linear.bias", bias)
		w, _ := m.Tensor("linear.weight")
		if wantLoc := map[bool]format.Location{true: format.LocSegment, false: format.LocInline}[v == 2]; w.Location != wantLoc {
			t.Errorf("%s linear.weight: %s, want %s", name, w.Location, wantLoc)
		}
		if as[*rten.Model](m).Metadata().License != "CC0-1.0" {
			t.Errorf("%s: metadata %+v", name, as[*rten.Model](m).Metadata())
		}
	}
}
