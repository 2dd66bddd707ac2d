//go:build linux

package memlimit

import (
	"strings"
	"testing"

	"github.com/edgeload/edgeload/mmapfile"
)

// The proof's rows: both baselines, cold and hot, are expected to fail;
// the 32-bit row is an edgeload row that releases; no row twice.
func TestProofRuns(t *testing.T) {
	runs := proofRuns()
	type key struct {
		name string
		hot  bool
	}
	seen := make(map[key]bool)
	baselines, rows386 := 0, 0
	for _, r := range runs {
		k := key{r.name, r.hot}
		if seen[k] {
			t.Errorf("row %q (%s) twice", r.name, cacheName(r.hot))
		}
		seen[k] = true
		if r.mode == ModeReadFile {
			baselines++
			if r.edge {
				t.Errorf("baseline %q counted as an edgeload row", r.name)
			}
		}
		if r.goarch == "386" {
			rows386++
			if !r.edge || !r.release || r.hot {
				t.Errorf("32-bit row %+v", r)
			}
		}
	}
	if baselines != 2 || rows386 != 1 {
		t.Errorf("%d baseline rows (want cold and hot), %d 32-bit rows (want 1)", baselines, rows386)
	}
	children := map[string]string{"": "child"}
	if m := missingRows(runs, children, "amd64", false); len(m) != 0 {
		t.Errorf("without the requirement, a missing 386 child drops its row: got %q", m)
	}
	if m := missingRows(runs, children, "amd64", true); len(m) != 1 || !strings.Contains(m[0], "386") {
		t.Errorf("required: missing rows %q, want the 32-bit row", m)
	}
	children["386"] = "child386"
	if m := missingRows(runs, children, "amd64", true); len(m) != 0 {
		t.Errorf("every child built: missing rows %q", m)
	}
	var no386 []run
	for _, r := range runs {
		if r.goarch != "386" {
			no386 = append(no386, r)
		}
	}
	if m := missingRows(no386, children, "amd64", true); len(m) != 1 {
		t.Errorf("required, the 32-bit row taken out of the list: missing rows %q", m)
	}
	if m := missingRows(runs, map[string]string{"386": "x"}, "amd64", false); len(m) == 0 {
		t.Error("no child for the test's own architecture: no row reported missing")
	}
}

// runProblems: the baseline passes only as an OOM kill; an edgeload row
// only with every sum right, its mapping mode and the cache state it asked
// for.
func TestRunProblems(t *testing.T) {
	var want float64
	for i := range Tensors {
		want += ExpectedSum(i)
	}
	okReport := func(mode mmapfile.Mode) *Report {
		return &Report{Tensors: Tensors, Bytes: Tensors * TensorBytes, Checksum: want, MappingMode: mode.String()}
	}
	baseline := run{name: "os.ReadFile baseline", mode: ModeReadFile}
	edge := run{name: "edgeload", mode: ModePlain, edge: true, release: true}
	e386 := run{name: "edgeload 386", mode: ModePlain, edge: true, release: true, goarch: "386"}
	for _, c := range []struct {
		name string
		res  result
		want string // a substring of the one problem; "" for none
	}{
		{"baseline OOM-killed", result{run: baseline, killed: true, oomKills: 1, cgPeak: limitBytes, outcome: "OOM-killed (SIGKILL)"}, ""},
		{"baseline killed, not by the OOM killer", result{run: baseline, killed: true, oomKills: 0, cgPeak: limitBytes, outcome: "killed (SIGKILL)"}, "not the OOM killer"},
		{"baseline killed, count unknown", result{run: baseline, killed: true, oomKills: -1, cgPeak: limitBytes}, "no OOM-kill count"},
		{"baseline failed without a kill", result{run: baseline, oomKills: 0, cgPeak: limitBytes, outcome: "failed: exit status 2", rep: &Report{Err: "open: no such file"}}, "not killed"},
		{"baseline succeeded", result{run: baseline, ok: true, cgPeak: limitBytes, rep: &Report{}}, "not enforced"},
		{"baseline, no limit", result{run: baseline, killed: true, oomKills: 1, cgPeak: 2 * limitBytes}, "limit was not in force"},
		{"edgeload ok", result{run: edge, ok: true, cgPeak: limitBytes, peakRSS: 11 << 20, rep: okReport(mmapfile.ModeWhole)}, ""},
		{"edgeload wrong sums", result{run: edge, ok: true, cgPeak: limitBytes, rep: &Report{Tensors: Tensors, Bytes: Tensors * TensorBytes, Checksum: want, Mismatches: 3, MappingMode: "whole"}}, "3 mismatches"},
		{"edgeload RSS", result{run: edge, ok: true, cgPeak: limitBytes, peakRSS: limitBytes, rep: okReport(mmapfile.ModeWhole)}, "peak RSS"},
		{"edgeload warm before a cold run", result{run: edge, ok: true, cgPeak: limitBytes, residentIn: 0.5, rep: okReport(mmapfile.ModeWhole)}, "cold run"},
		{"386 windowed", result{run: e386, ok: true, cgPeak: limitBytes, rep: okReport(mmapfile.ModeWindowed)}, ""},
		{"386 mapped whole", result{run: e386, ok: true, cgPeak: limitBytes, rep: okReport(mmapfile.ModeWhole)}, "mapping mode"},
	} {
		ps := runProblems(c.res)
		switch {
		case c.want == "" && len(ps) != 0:
			t.Errorf("%s: problems %q, want none", c.name, ps)
		case c.want != "" && (len(ps) != 1 || !strings.Contains(ps[0], c.want)):
			t.Errorf("%s: problems %q, want one about %q", c.name, ps, c.want)
		}
	}
}
