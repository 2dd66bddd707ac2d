package runtimes

import (
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// variant is a file written by `edgeload repack` from a model, or such a
// file broken (flip): one weight byte flipped, or one byte of every weight
// (probe).
type variant struct {
	name   string
	file   File
	skip   string // non-empty: not run in the runtime, and why (repack --check still compares it)
	differ string // non-empty: the runtime's results may differ from the original's, and why
	flip   *Breakage
	probe  bool // flip breaks every weight: does the runtime see the weights at all?
}

// subject is a model under check: the original's run, and the runs of its
// variants by variant name.
type subject struct {
	file   File
	orig   Run
	runs   map[string]Run
	cannot string // why the runtime runs none or only part of it
}

// breakages returns the broken variants of a repacked file: one weight
// byte flipped, and one byte of every weight.
func breakages(t *testing.T, dir string, f File) []variant {
	t.Helper()
	var vs []variant
	if b, ok := FlipWeight(t, dir, f); ok {
		vs = append(vs, variant{name: "flipped-weight", file: b.File, flip: &b})
	}
	if b, ok := PerturbWeights(t, dir, f); ok {
		vs = append(vs, variant{name: "every-weight-flipped", file: b.File, flip: &b, probe: true})
	}
	return vs
}

// inCI reports whether the tests run under CI=true, where what would skip
// must pass instead.
func inCI() bool { return os.Getenv("CI") == "true" }

// clip shortens s to n bytes for a log line.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// logInputs says whether the model's outputs depend on its input sets: a
// model whose input sets all give the same outputs computes something its
// inputs do not change, and only its weights (or nothing) can show a bad
// file. Input sets that are all the same fail the test (a driver that
// ignores its seeds).
func logInputs(t *testing.T, s subject) {
	t.Helper()
	same := func(sets []InputSet) bool {
		for _, x := range sets[min(1, len(sets)):] {
			if !reflect.DeepEqual(x.Inputs, sets[0].Inputs) {
				return false
			}
		}
		return len(sets) > 1 && len(sets[0].Inputs) > 0
	}
	if same(s.orig.Sets) {
		t.Errorf("its %d input sets are the same inputs", len(s.orig.Sets))
	}
	for name, m := range s.orig.Methods {
		if same(m.Sets) {
			t.Errorf("method %s: its %d input sets are the same inputs", name, len(m.Sets))
		}
	}
	if len(s.orig.Ran()) == 0 {
		return
	}
	if ok, n := s.orig.InputsMatter(); !ok {
		t.Logf("its outputs do not depend on its inputs: all %d input sets give the same outputs", n)
	}
}

// logWeights says what the breakages of a model showed of it: that it has
// no weight to break, or, when the runtime ran it to the original's outputs
// with every weight perturbed, that its outputs do not depend on its
// weights and its check relies on repack --check.
func logWeights(t *testing.T, s subject, probe caught, probed bool) {
	t.Helper()
	switch {
	case !probed:
		t.Logf("it holds no weight to break (no dense constant tensor): the runtime's outputs are what is compared, and repack --check the rest")
	case len(s.orig.Ran()) > 0 && !probe.runtime:
		_, n := s.orig.InputsMatter()
		t.Logf("MARKED: its outputs do not depend on its weights (one byte of every weight flipped, all %d input sets give the original's outputs): its check relies on repack --check", n)
	}
}

// checkVariant requires that a repacked file holds the bytes the original
// holds (repack --check) and that the runtime gives it the original's
// results, bit for bit, on every input set. What the runtime cannot run is
// a skip that says so, after --check has passed.
func checkVariant(t *testing.T, s subject, v variant) {
	t.Helper()
	if d := CheckSays(s.file, v.file); d != "" {
		t.Errorf("repack --check %s against the original: %s", v.file.Path, d)
	}
	if v.skip != "" {
		t.Skipf("not run in the runtime: %s (repack --check compared it)", v.skip)
	}
	got, ok := s.runs[v.name]
	if !ok {
		t.Fatal("the driver did not report it")
	}
	d := Compare(s.orig, got)
	if v.differ != "" {
		t.Logf("the runtime may give other results (%s): %d difference(s): %s", v.differ, len(d), clip(strings.Join(d, "; "), 400))
		return
	}
	if len(d) > 0 {
		t.Errorf("%s: the runtime's results differ from the original's:\n%s", v.file.Path, strings.Join(d, "\n"))
		return
	}
	ran := got.Ran()
	if len(ran) == 0 {
		t.Skipf("the runtime runs none of it (%s): its load error and metadata are the original's, but there is no output to compare; repack --check: no difference", s.cannot)
	}
	_, n := got.InputsMatter()
	t.Logf("repack --check: no difference; the runtime: %d method(s) bit-identical to the original on %d input set(s)", len(ran), n)
}

// caught is which checks caught a breakage.
type caught struct {
	runtime bool // the runtime's results differ
	outputs bool // ... in the outputs of methods that ran on both files
	check   bool // repack --check
}

// checkBreakage runs repack --check on a broken copy against the original
// and compares the runtime's results for it, and says which check caught
// the breakage; --check must catch it (it compares every byte that carries
// meaning), naming each thing broken. With every weight perturbed (probe),
// a runtime that gives the original's outputs marks the model as one whose
// outputs do not depend on its weights: its check relies on --check.
func checkBreakage(t *testing.T, s subject, v variant) caught {
	t.Helper()
	b := v.flip
	var c caught
	diffs, err := Check(s.file, b.File)
	var said string
	if err != nil {
		c.check, said = true, "it refuses the file: "+err.Error()
	} else {
		named := map[string]bool{}
		var ds []string
		for _, d := range diffs {
			ds = append(ds, d.String())
			named[d.Name] = true
		}
		said = strings.Join(ds, "; ")
		var missed []string
		for _, n := range b.Names {
			if !named[n] {
				missed = append(missed, n)
			}
		}
		c.check = len(missed) == 0
		if !c.check {
			t.Errorf("%s: repack --check did not name %q: %q", b.What, missed, said)
		}
	}
	got, ok := s.runs[v.name]
	if !ok {
		t.Fatal("the driver did not report it")
	}
	var d []string
	if len(s.orig.Ran()) > 0 {
		// (a runtime that refuses a file names it in its error, so only the
		// runs of a model it runs are compared)
		d = Compare(s.orig, got)
	}
	c.runtime = len(d) > 0
	c.outputs = c.runtime && len(got.Ran()) == len(s.orig.Ran())
	_, n := s.orig.InputsMatter()
	switch {
	case c.runtime:
		t.Logf("%s: caught by the runtime (%s) and by repack --check (%s)", b.What, clip(d[0], 160), clip(said, 200))
	case len(s.orig.Ran()) == 0:
		t.Logf("%s: caught by repack --check only (%s): the runtime runs none of it (%s)", b.What, clip(said, 200), s.cannot)
	case v.probe:
		t.Logf("%s: caught by repack --check only (%s): ITS OUTPUTS DO NOT DEPEND ON ITS WEIGHTS: the runtime gives the original's outputs on all %d input sets, so its check relies on repack --check",
			b.What, clip(said, 200), n)
	default:
		t.Logf("%s: caught by repack --check only (%s): the runtime gives the original's outputs on all %d input sets",
			b.What, clip(said, 200), n)
	}
	return c
}

// requireRuntimeCatches fails the test when no model whose outputs the
// runtime computed gave other outputs with its weights perturbed (an error
// does not count): then the runtime's comparison of outputs shows nothing
// at all (a driver that digests nothing of them, say).
func requireRuntimeCatches(t *testing.T, results map[string]caught, ran map[string]bool) {
	t.Helper()
	var tried []string
	for name, c := range results {
		if c.outputs {
			return
		}
		if ran[name] {
			tried = append(tried, name)
		}
	}
	if len(tried) > 0 {
		sort.Strings(tried)
		t.Errorf("no model gave other outputs with its weights perturbed (%s): the runtime's comparison of outputs catches nothing", strings.Join(tried, ", "))
	}
}

// notRepacked handles a model that repack refuses because it cannot
// rewrite its format: under CI=true a failure (every format must repack),
// elsewhere a skip with repack's message.
func notRepacked(t *testing.T, msg string) {
	t.Helper()
	if inCI() {
		t.Fatalf("edgeload repack refuses its format (CI=true requires every format to repack): %s", msg)
	}
	t.Skipf("not repacked: edgeload repack refuses its format: %s", msg)
}
