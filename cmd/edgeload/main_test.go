package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/platform"
)

// runCmd runs the command in-process.
func runCmd(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

// fixture returns the path of a committed fixture.
func fixture(name string) string { return filepath.Join(testmodels.Root(), "testdata", name) }

// checkFailLine checks the one-line error of exit status 1.
func checkFailLine(t *testing.T, stderr string) {
	t.Helper()
	if !strings.HasPrefix(stderr, "edgeload: ") || strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Errorf("stderr is not one \"edgeload: \" line: %q", stderr)
	}
	if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
		t.Errorf("stderr shows a panic: %q", stderr)
	}
}

// TestInspectJSONReal is the acceptance test: inspect --json --sha256 on
// every real file gives what the independent reader says (expected/*.json):
// format, file size, segments, named data, and each tensor's name, dtype,
// shape, location, absolute offset, size and SHA-256.
func TestInspectJSONReal(t *testing.T) {
	for _, path := range append(testmodels.All(t), testmodels.Refused(t)...) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			if strings.HasSuffix(path, ".bpte") {
				t.Skip("the reference rejects bundled programs; TestInspectBundle checks edgeload's output")
			}
			exp := testmodels.Load(t, path)
			code, out, errOut := runCmd("inspect", "--json", "--sha256", path)
			if exp.ExitCode != 0 {
				if code != exp.ExitCode || out != "" {
					t.Fatalf("exit %d, stdout %q; want exit %d (%s)", code, out, exp.ExitCode, exp.Error)
				}
				checkFailLine(t, errOut)
				return
			}
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			compareExpected(t, out, exp, nil)
		})
	}
}

// resolvedAt is where a resolved external tensor's bytes are: the tensor
// as expected in its .ptd, and the .ptd's path.
type resolvedAt struct {
	testmodels.Tensor
	file string
}

// compareExpected decodes inspect --json output and compares it with exp.
// override gives, by name, the expected offset, sha and data file of
// resolved external tensors.
func compareExpected(t *testing.T, out string, exp testmodels.Expected, override map[string]resolvedAt) map[string]any {
	t.Helper()
	var got testmodels.Expected
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	// The required keys are present, with arrays (never null).
	for _, k := range []string{"format", "file_size", "segments", "named_data", "tensors"} {
		v, ok := raw[k]
		if !ok || v == nil {
			t.Errorf("key %q missing or null", k)
		}
	}
	if got.Format != exp.Format || got.FileSize != exp.FileSize || got.Legacy != exp.Legacy {
		t.Errorf("format %q size %d legacy %v, want %q %d %v", got.Format, got.FileSize, got.Legacy, exp.Format, exp.FileSize, exp.Legacy)
	}
	if !reflect.DeepEqual(got.Segments, exp.Segments) && !(len(got.Segments) == 0 && len(exp.Segments) == 0) {
		t.Errorf("segments %+v\nwant %+v", got.Segments, exp.Segments)
	}
	if exp.Format == "tflite" && len(exp.NamedData) == 0 {
		// associated files are the reader's choice to list (JSON.md);
		// expected/ lists none
		got.NamedData = nil
	}
	if !reflect.DeepEqual(got.NamedData, exp.NamedData) && !(len(got.NamedData) == 0 && len(exp.NamedData) == 0) {
		t.Errorf("named_data %+v\nwant %+v", got.NamedData, exp.NamedData)
	}
	if len(got.Tensors) != len(exp.Tensors) {
		t.Fatalf("%d tensors, want %d", len(got.Tensors), len(exp.Tensors))
	}
	rawTensors, _ := raw["tensors"].([]any)
	for i, e := range exp.Tensors {
		g := got.Tensors[i]
		dataFile := ""
		if o, ok := override[e.Name]; ok {
			e.Offset, e.SHA256, dataFile = o.Offset, o.SHA256, o.file
		}
		if g.Name != e.Name || g.DType != e.DType || !reflect.DeepEqual(g.Shape, e.Shape) || g.Location != e.Location ||
			g.NBytes != e.NBytes || g.NameExplicit != e.NameExplicit || g.SHA256 != e.SHA256 {
			t.Errorf("tensor %d:\n got %+v\nwant %+v", i, g, e)
		}
		if (g.Offset == nil) != (e.Offset == nil) || (g.Offset != nil && *g.Offset != *e.Offset) {
			t.Errorf("tensor %q: offset %v, want %v", e.Name, ptr(g.Offset), ptr(e.Offset))
		}
		// An unresolved offset is JSON null, not a missing key.
		if m, ok := rawTensors[i].(map[string]any); !ok {
			t.Errorf("tensor %d is not an object", i)
		} else if v, present := m["offset"]; !present || (e.Offset == nil && v != nil) {
			t.Errorf("tensor %q: offset key %v present=%v", e.Name, v, present)
		} else if df, _ := m["data_file"].(string); df != dataFile {
			t.Errorf("tensor %q: data_file %q, want %q", e.Name, df, dataFile)
		}
	}
	return raw
}

func ptr(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestInspectData resolves external tensors through --data: offsets are
// those in the .ptd, data_file names it, and the bytes are the .ptd's.
func TestInspectData(t *testing.T) {
	for _, c := range []struct{ pte, ptd string }{
		{"pte/linear-external.pte", "ptd/linear-legacy-2025.ptd"},
		{"pte/addmul-external.pte", "ptd/addmul-external.ptd"},
	} {
		ptePath, ptdPath := testmodels.Path(t, c.pte), testmodels.Path(t, c.ptd)
		exp, dexp := testmodels.Load(t, ptePath), testmodels.Load(t, ptdPath)
		override := map[string]resolvedAt{}
		for _, d := range dexp.Tensors {
			override[d.Name] = resolvedAt{d, ptdPath}
		}
		code, out, errOut := runCmd("inspect", "--json", "--sha256", "--data", ptdPath, ptePath)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.pte, code, errOut)
		}
		for _, e := range exp.Tensors {
			if _, ok := override[e.Name]; !ok {
				t.Fatalf("%s: tensor %q is not in %s", c.pte, e.Name, c.ptd)
			}
		}
		raw := compareExpected(t, out, exp, override)
		if df, _ := raw["data_files"].([]any); len(df) != 1 || df[0] != ptdPath {
			t.Errorf("%s: data_files %v", c.pte, raw["data_files"])
		}
	}
	// Flags after the file work too, and a mismatched data file is an error.
	code, _, errOut := runCmd("inspect", testmodels.Path(t, "pte/linear-external.pte"), "--data", testmodels.Path(t, "ptd/addmul-external.ptd"))
	if code != 1 || !strings.Contains(errOut, "linear.weight") {
		t.Errorf("mismatched --data: exit %d %q", code, errOut)
	}
	checkFailLine(t, errOut)
}

// TestInspectText checks the human summary of each fixture: the sections,
// and a tensor table whose columns line up.
func TestInspectText(t *testing.T) {
	for _, c := range []struct {
		file string
		want []string
	}{
		{"tiny.pte", []string{"format  pte\n", "\nExecuTorch program\n", "segments (3)", "methods (1)", "delegates (1)", "XnnpackBackend", "tensors (3)", "named data (1)", "sha256:0f1e2d3c", "warnings"}},
		{"tiny-external.pte", []string{"tensors (2)", "external", "2 of 2 external tensors are not resolved"}},
		{"tiny.ptd", []string{"format  ptd", "legacy layout        false", "named data (2)"}},
		{"tiny-v2.rten", []string{"format  rten\n", "\nRTen model\n", "tensor data offset", "graph", "Add×1 MatMul×1", "license      CC0-1.0", "linear.bias"}},
		{"tiny-v1.rten", []string{"version       1", "segments (0)", "inline"}},
	} {
		code, out, errOut := runCmd("inspect", fixture(c.file))
		if code != 0 {
			t.Fatalf("%s: exit %d %s", c.file, code, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", c.file, w, out)
			}
		}
		checkColumns(t, c.file, out)
	}
}

// checkColumns checks that every row of the tensors table starts each
// column where the header's column title starts.
func checkColumns(t *testing.T, file, out string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "  NAME ") || !strings.Contains(l, "DTYPE") {
			continue
		}
		cols := []int{strings.Index(l, "DTYPE"), strings.Index(l, "SHAPE"), strings.Index(l, "LOCATION"), strings.Index(l, "OFFSET"), strings.Index(l, "NBYTES")}
		rows := 0
		for _, r := range lines[i+1:] {
			if !strings.HasPrefix(r, "  ") || strings.HasPrefix(r, "  sum of") {
				break
			}
			rows++
			for _, c := range cols {
				if c >= len(r) || r[c-1] != ' ' || r[c] == ' ' {
					t.Errorf("%s: row %q does not start a column at %d", file, r, c)
				}
			}
		}
		if rows == 0 {
			t.Errorf("%s: empty tensor table", file)
		}
		return
	}
	t.Errorf("%s: no tensor table", file)
}

// TestInspectAlignment: segments aligned to 16 KiB get no page warning and
// show their alignment; the default 128 gets a warning.
func TestInspectAlignment(t *testing.T) {
	dir := t.TempDir()
	for _, align := range []int64{16384, 128} {
		w := writer.TinyPTE()
		w.SegmentAlignment = align
		path := filepath.Join(dir, fmt.Sprintf("a%d.pte", align))
		if _, err := w.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runCmd("inspect", "--json", path)
		if code != 0 {
			t.Fatalf("exit %d %s", code, errOut)
		}
		var doc struct {
			Segments []struct {
				Offset, Align int64
			}
			Warnings []string
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Segments) != 3 {
			t.Fatalf("%d segments", len(doc.Segments))
		}
		for _, s := range doc.Segments {
			if s.Offset%align != 0 || s.Align < align || s.Align&(s.Align-1) != 0 || s.Offset%s.Align != 0 {
				t.Errorf("align %d: segment at %d shows alignment %d", align, s.Offset, s.Align)
			}
		}
		warned := strings.Contains(strings.Join(doc.Warnings, "\n"), "not aligned")
		if warned != (align%int64(platform.PageSize()) != 0) {
			t.Errorf("align %d: warnings %q", align, doc.Warnings)
		}
	}
}

// TestUsage checks help, usage errors and their exit statuses.
func TestUsage(t *testing.T) {
	for _, c := range []struct {
		args       []string
		code       int
		out, err   string // substrings expected on stdout and stderr ("" = must be empty)
		errNonZero bool
	}{
		{nil, 2, "", "Usage:", true},
		{[]string{"-h"}, 0, "Usage:", "", false},
		{[]string{"--help"}, 0, "edgeload inspect", "", false},
		{[]string{"help"}, 0, "Commands:", "", false},
		{[]string{"help", "inspect"}, 0, "--data FILE.ptd", "", false},
		{[]string{"help", "nope"}, 2, "", "edgeload: help: unknown command", true},
		{[]string{"inspect", "-h"}, 0, "Usage: edgeload inspect", "", false},
		{[]string{"verify", "--help"}, 0, "Usage: edgeload verify", "", false},
		{[]string{"resident", "-h"}, 0, "-width", "", false},
		{[]string{"version", "-h"}, 0, "Usage: edgeload version", "", false},
		{[]string{"bogus"}, 2, "", "edgeload: unknown command \"bogus\"", true},
		{[]string{"--bogus"}, 2, "", "edgeload: unknown flag --bogus", true},
		{[]string{"inspect"}, 2, "", "want one FILE", true},
		{[]string{"inspect", "a", "b"}, 2, "", "want one FILE", true},
		{[]string{"inspect", "--nope", "x"}, 2, "", "flag provided but not defined: -nope", true},
		{[]string{"verify"}, 2, "", "want at least one FILE", true},
		{[]string{"resident", "--width", "0", "x"}, 2, "", "--width 0", true},
		{[]string{"version", "extra"}, 2, "", "no arguments", true},
	} {
		code, out, errOut := runCmd(c.args...)
		if code != c.code {
			t.Errorf("%q: exit %d, want %d (stderr %q)", c.args, code, c.code, errOut)
		}
		if (c.out == "") != (out == "") || !strings.Contains(out, c.out) {
			t.Errorf("%q: stdout %q, want it to contain %q", c.args, out, c.out)
		}
		if (c.err == "") != (errOut == "") || !strings.Contains(errOut, c.err) {
			t.Errorf("%q: stderr %q, want it to contain %q", c.args, errOut, c.err)
		}
		if c.errNonZero && !strings.HasPrefix(errOut, "edgeload: ") && !strings.HasPrefix(errOut, "edgeload opens") {
			t.Errorf("%q: stderr does not begin with \"edgeload: \": %q", c.args, errOut)
		}
	}
	code, out, _ := runCmd("version")
	if code != 0 || !regexp.MustCompile(`^edgeload \S+ \(go\S*\)\n$`).MatchString(out) {
		t.Errorf("version: %d %q", code, out)
	}
}

// TestInvalidInputs: every bad input is exit 1 with one stderr line.
func TestInvalidInputs(t *testing.T) {
	dir := t.TempDir()
	tiny, err := os.ReadFile(fixture("tiny.pte"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"empty":     nil,
		"text.pte":  []byte("hello\n"),
		"half.pte":  tiny[:len(tiny)/2],
		"et13.pte":  append(append(append([]byte{}, tiny[:4]...), "ET13"...), tiny[8:]...),
		"zeros.bin": make([]byte, 4096),
	}
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"inspect", "resident"} {
			code, out, errOut := runCmd(cmd, p)
			if code != 1 || out != "" {
				t.Errorf("%s %s: exit %d stdout %q", cmd, name, code, out)
			}
			checkFailLine(t, errOut)
			if !strings.Contains(errOut, p) {
				t.Errorf("%s %s: error does not name the file: %q", cmd, name, errOut)
			}
		}
	}
	code, _, errOut := runCmd("inspect", filepath.Join(dir, "missing.pte"))
	if code != 1 || !strings.Contains(errOut, "no such file") {
		t.Errorf("missing file: %d %q", code, errOut)
	}
	checkFailLine(t, errOut)
	if strings.Count(errOut, "missing.pte") != 1 {
		t.Errorf("the path is repeated: %q", errOut)
	}
	code, _, errOut = runCmd("inspect", "--data", fixture("tiny.ptd"), fixture("tiny-v2.rten"))
	if code != 1 {
		t.Errorf("--data with an rten file: exit %d", code)
	}
	checkFailLine(t, errOut)
}

// TestVerify: one line per file, exit 1 if any fails.
func TestVerify(t *testing.T) {
	// The model fixtures of testdata/: not its folders, nor the task
	// bundle, a zip of models (TestInspectTaskBundle).
	all, _ := filepath.Glob(fixture("tiny*"))
	all = slices.DeleteFunc(all, func(p string) bool { return strings.HasSuffix(p, ".task") })
	if len(all) < 5 {
		t.Fatalf("fixtures: %v", all)
	}
	code, out, errOut := runCmd(append([]string{"verify"}, all...)...)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(all) {
		t.Fatalf("%d lines for %d files:\n%s", len(lines), len(all), out)
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, "ok    "+all[i]+": ") {
			t.Errorf("line %q", l)
		}
	}
	// With --data the external tensors are read too.
	code, out, _ = runCmd("verify", "--data", fixture("tiny.ptd"), fixture("tiny-external.pte"), fixture("tiny-v2.rten"))
	if code != 0 || strings.Contains(out, "unresolved") || !strings.Contains(out, "36 B read") {
		t.Errorf("verify --data: %d %q", code, out)
	}

	bad := filepath.Join(t.TempDir(), "bad.pte")
	b, _ := os.ReadFile(fixture("tiny.pte"))
	os.WriteFile(bad, b[:700], 0o644)
	code, out, errOut = runCmd("verify", fixture("tiny.pte"), bad, fixture("tiny.ptd"))
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ok") || !strings.HasPrefix(lines[1], "FAIL  "+bad+": ") || !strings.HasPrefix(lines[2], "ok") {
		t.Errorf("lines:\n%s", out)
	}
	checkFailLine(t, errOut)
	if !strings.Contains(errOut, "1 of 3 files failed") {
		t.Errorf("stderr %q", errOut)
	}
}

// TestResident checks the bars: one for the file and one per segment.
func TestResident(t *testing.T) {
	code, out, errOut := runCmd("resident", "--width", "10", fixture("tiny.pte"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	bar := regexp.MustCompile(`^(file|segment \d+)\s+\[[#.]{10}\]\s+<?\d{1,3}%\s+\d+(\.\d)? [KMGT]?i?B / \d+(\.\d)? [KMGT]?i?B$`)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 1+1+3 || !strings.HasPrefix(lines[0], fixture("tiny.pte")+": pte, ") {
		t.Fatalf("output:\n%s", out)
	}
	for _, l := range lines[1:] {
		if !bar.MatchString(l) {
			t.Errorf("not a bar line: %q", l)
		}
	}
	// A file just read is in the page cache: its bar is full.
	if !strings.Contains(lines[1], "[##########]  100%") {
		t.Errorf("a file just written and read is not shown resident: %q", lines[1])
	}
	// rten V1 has no segments: only the file line.
	code, out, _ = runCmd("resident", fixture("tiny-v1.rten"))
	if code != 0 || strings.Count(out, "\n") != 2 || strings.Contains(out, "segment 0") {
		t.Errorf("v1: %d %q", code, out)
	}
}

func TestResidentLine(t *testing.T) {
	for _, c := range []struct {
		res, total int
		want       string
	}{
		{0, 10, "[..........]    0%"},
		{1, 100, "[#.........]    1%"},
		{1, 1000, "[#.........]   <1%"},
		{99, 100, "[#########.]   99%"},
		{10, 10, "[##########]  100%"},
		{5, 10, "[#####.....]   50%"},
	} {
		got := barFor(c.res, c.total, 10)
		if got != c.want {
			t.Errorf("barFor(%d, %d) = %q, want %q", c.res, c.total, got, c.want)
		}
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB", 3 << 20: "3 MiB", 1363149: "1.3 MiB", 5 << 30: "5 GiB"} {
		if got := sizeName(n); got != want {
			t.Errorf("sizeName(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestExec builds the command and runs it as a user would: exit statuses,
// streams, and no stack trace.
func TestExec(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool in PATH")
	}
	bin := filepath.Join(t.TempDir(), "edgeload")
	build := exec.Command(goTool, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	runBin := func(args ...string) (int, string, string) {
		var o, e bytes.Buffer
		c := exec.Command(bin, args...)
		c.Stdout, c.Stderr = &o, &e
		err := c.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, o.String(), e.String()
		case errors.As(err, &ee):
			return ee.ExitCode(), o.String(), e.String()
		case errors.Is(err, syscall.ENOEXEC):
			t.Skipf("cannot run the built binary here (emulated architecture?): %v", err)
		default:
			t.Fatalf("run: %v", err)
		}
		return -1, "", ""
	}
	code, out, errOut := runBin("inspect", fixture("tiny.pte"))
	if code != 0 || !strings.Contains(out, "linear.weight") || errOut != "" {
		t.Errorf("inspect: %d %q %q", code, out, errOut)
	}
	code, out, errOut = runBin("inspect", "--json", fixture("tiny-v2.rten"))
	var doc map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc["format"] != "rten" {
		t.Errorf("inspect --json: %d %q %q", code, out, errOut)
	}
	if dir := testmodels.Dir(t); dir != "" {
		code, out, errOut = runBin("inspect", filepath.Join(dir, "pte", "bundled-program.bpte"))
		if code != 0 || !strings.Contains(out, "method test suites (1)") || errOut != "" {
			t.Errorf("bundled program: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	}
	if code, _, errOut = runBin(); code != 2 || !strings.Contains(errOut, "Usage:") {
		t.Errorf("no arguments: %d %q", code, errOut)
	}
	if code, out, _ = runBin("inspect", "-h"); code != 0 || !strings.Contains(out, "Usage: edgeload inspect") {
		t.Errorf("inspect -h: %d %q", code, out)
	}
	if code, _, errOut = runBin("inspect", "-x"); code != 2 {
		t.Errorf("bad flag: %d %q", code, errOut)
	}
}

// TestSafeRun: a panic (a bug) becomes one line and exit status 1.
func TestSafeRun(t *testing.T) {
	saved := commands
	defer func() { commands = saved }()
	commands = append([]*command{{name: "boom", run: func(*cli, []string) int { panic("kaboom\nsecond line") }}}, saved...)
	var o, e bytes.Buffer
	code := safeRun([]string{"boom"}, &o, &e)
	if code != 1 || e.String() != "edgeload: internal error: kaboom; second line\n" {
		t.Errorf("exit %d, stderr %q", code, e.String())
	}
}

// TestHelpListsFormats: the overview lists every registered format with
// the files it reads, and inspect's help its use order, the toy format of
// the tests included: both come from the registrations.
func TestHelpListsFormats(t *testing.T) {
	_, usage, _ := runCmd("-h")
	_, inspect, _ := runCmd("help", "inspect")
	regs := format.Registered()
	if !slices.ContainsFunc(regs, func(r format.Registration) bool { return r.Name == "toy" }) || len(regs) < 10 {
		t.Fatalf("%d formats registered, the toy format and the built-in ones expected", len(regs))
	}
	for _, r := range regs {
		if r.Files == "" || r.Order == "" {
			t.Errorf("format %s: Files %q, Order %q: the help needs both", r.Name, r.Files, r.Order)
		}
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(r.Name) + ` +` + regexp.QuoteMeta(r.Files) + `$`).MatchString(usage) {
			t.Errorf("edgeload -h does not list %s: %s", r.Name, r.Files)
		}
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(r.Name) + ` +` + regexp.QuoteMeta(r.Order) + `$`).MatchString(inspect) {
			t.Errorf("edgeload help inspect does not give %s's order: %s", r.Name, r.Order)
		}
	}
}
