package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/bpfb"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/ziptest"
	"github.com/edgeload/edgeload/mmapfile"
)

func writeTemp(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Every real model stored in a zip at an odd offset gives, through
// ARCHIVE!/ENTRY, the same inspect --json --sha256 as the file itself and
// (for the files the reference reads) the expected values; the deflated
// copy is refused in one line that says how to store it.
func TestInspectZipEntry(t *testing.T) {
	for i, path := range testmodels.All(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			archive, _, err := ziptest.Model(b)
			if err != nil {
				t.Fatal(err)
			}
			zp := writeTemp(t, t.TempDir(), "app.apk", archive)
			code, want, errOut := runCmd("inspect", "--json", "--sha256", path)
			if code != 0 {
				t.Fatalf("the file: exit %d: %s", code, errOut)
			}
			code, got, errOut := runCmd("inspect", "--json", "--sha256", zp+"!/"+ziptest.Stored)
			if code != 0 || errOut != "" {
				t.Fatalf("the stored entry: exit %d: %s", code, errOut)
			}
			if got != want {
				t.Errorf("inspect --json of the entry differs from the file's:\n%s\nwant\n%s", got, want)
			}
			if exp := testmodels.Load(t, path); exp.ExitCode == 0 {
				compareExpected(t, got, exp, nil)
			}
			if i > 0 {
				return // the refusal and verify are the same for every model
			}
			code, out, errOut := runCmd("inspect", zp+"!/"+ziptest.Deflated)
			if code != 1 || out != "" || !strings.Contains(errOut, "compressed") || !strings.Contains(errOut, "zip -0") {
				t.Errorf("the deflated entry: exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			checkFailLine(t, errOut)
			code, out, _ = runCmd("verify", zp+"!/"+ziptest.Stored)
			if code != 0 || !strings.HasPrefix(out, "ok ") {
				t.Errorf("verify of the stored entry: exit %d, %q", code, out)
			}
		})
	}
}

// bundleFacts reads a bundled program with the generated bpfb code alone:
// the embedded program's bytes, and per suite its method, number of test
// cases and number of tensor values.
func bundleFacts(b []byte) (prog []byte, methods []string, cases, tensors []int) {
	root := bpfb.GetRootAsBundledProgram(b, 0)
	prog = bytes.Clone(root.ProgramBytes())
	var s bpfb.BundledMethodTestSuite
	var c bpfb.BundledMethodTestCase
	var v bpfb.Value
	for i := 0; i < root.MethodTestSuitesLength(); i++ {
		root.MethodTestSuites(&s, i)
		methods = append(methods, string(s.MethodName()))
		cases = append(cases, s.TestCasesLength())
		n := 0
		for j := 0; j < s.TestCasesLength(); j++ {
			s.TestCases(&c, j)
			for k := 0; k < c.InputsLength(); k++ {
				if c.Inputs(&v, k) && v.ValType() == bpfb.ValueUnionTensor {
					n++
				}
			}
			for k := 0; k < c.ExpectedOutputsLength(); k++ {
				var tab flatbuffers.Table
				if c.ExpectedOutputs(&v, k) && v.ValType() == bpfb.ValueUnionTensor && v.Val(&tab) {
					n++
				}
			}
		}
		tensors = append(tensors, n)
	}
	return prog, methods, cases, tensors
}

// inspect of a bundled program shows the program it embeds exactly as
// inspect of those bytes copied out, plus the bundle's test suites; verify
// reads every test tensor.
func TestInspectBundle(t *testing.T) {
	path := testmodels.Path(t, "pte/bundled-program.bpte")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	prog, methods, cases, tensors := bundleFacts(b)
	progPath := writeTemp(t, t.TempDir(), "program.pte", prog)
	code, want, errOut := runCmd("inspect", "--json", "--sha256", progPath)
	if code != 0 {
		t.Fatalf("the program copied out: exit %d: %s", code, errOut)
	}
	code, got, errOut := runCmd("inspect", "--json", "--sha256", path)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var g, w map[string]any
	if json.Unmarshal([]byte(got), &g) != nil || json.Unmarshal([]byte(want), &w) != nil {
		t.Fatal("output is not JSON")
	}
	bundle, ok := g["bundle"].(map[string]any)
	if !ok {
		t.Fatalf("no \"bundle\" in %s", got)
	}
	delete(g, "bundle")
	if g["format"] != "bpte" {
		t.Errorf("format %v, want bpte", g["format"])
	}
	g["format"] = "pte"
	gj, _ := json.Marshal(g)
	wj, _ := json.Marshal(w)
	if !bytes.Equal(gj, wj) {
		t.Errorf("the bundle's program differs from the program copied out:\n%s\nwant\n%s", gj, wj)
	}
	suites, _ := bundle["test_suites"].([]any)
	if len(suites) != len(methods) || bundle["program_size"] != float64(len(prog)) || bundle["bundle_size"] != float64(len(b)) {
		t.Fatalf("bundle %v, want %d suites and a %d-byte program", bundle, len(methods), len(prog))
	}
	total := 0
	for i, s := range suites {
		m := s.(map[string]any)
		if m["method"] != methods[i] || m["test_cases"] != float64(cases[i]) {
			t.Errorf("suite %d: %v, want %s with %d cases", i, m, methods[i], cases[i])
		}
		total += tensors[i]
	}
	code, text, _ := runCmd("inspect", path)
	if code != 0 || !strings.Contains(text, "bundled program") || !strings.Contains(text, fmt.Sprintf("%s  %d", methods[0], cases[0])) {
		t.Errorf("text output: %d\n%s", code, text)
	}
	code, out, errOut := runCmd("verify", path)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("%d test tensors", total)) || total == 0 {
		t.Errorf("verify: exit %d, %q %q; want %d test tensors", code, out, errOut, total)
	}

	// The bundle inside an APK, as a device would ship it.
	archive, _, err := ziptest.Model(b)
	if err != nil {
		t.Fatal(err)
	}
	zp := writeTemp(t, t.TempDir(), "app.apk", archive)
	if code, zout, errOut := runCmd("inspect", "--json", "--sha256", zp+"!/"+ziptest.Stored); code != 0 || zout != got {
		t.Errorf("the bundle in a zip: exit %d %s", code, errOut)
	}
	if code, out, _ := runCmd("verify", zp+"!/"+ziptest.Stored); code != 0 || !strings.Contains(out, "test tensors") {
		t.Errorf("verify of the bundle in a zip: %d %q", code, out)
	}
}

// --data takes ARCHIVE!/ENTRY too.
func TestDataZipEntry(t *testing.T) {
	pteB, err := os.ReadFile(testmodels.Path(t, "pte/addmul-external.pte"))
	if err != nil {
		t.Fatal(err)
	}
	ptdB, err := os.ReadFile(testmodels.Path(t, "ptd/addmul-external.ptd"))
	if err != nil {
		t.Fatal(err)
	}
	archive, err := ziptest.Bytes(ziptest.Entry{Name: "m.pte", Data: pteB}, ziptest.Entry{Name: "d/w.ptd", Data: ptdB})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	zp := writeTemp(t, dir, "app.zip", archive)
	ptdPath := writeTemp(t, dir, "w.ptd", ptdB)
	code, want, errOut := runCmd("inspect", "--json", "--sha256", "--data", ptdPath, zp+"!/m.pte")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	code, got, errOut := runCmd("inspect", "--json", "--sha256", "--data", zp+"!/d/w.ptd", zp+"!/m.pte")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.ReplaceAll(got, zp+"!/d/w.ptd", ptdPath) != want || !strings.Contains(got, "sha256") {
		t.Errorf("--data from a zip entry:\n%s\nwant (file names aside)\n%s", got, want)
	}
	if code, out, _ := runCmd("verify", "--data", zp+"!/d/w.ptd", zp+"!/m.pte"); code != 0 || strings.Contains(out, "unresolved") {
		t.Errorf("verify: %d %q", code, out)
	}
}

func TestSplitArchive(t *testing.T) {
	dir := t.TempDir()
	zp := writeTemp(t, dir, "a.zip", []byte("x"))
	odd := filepath.Join(dir, "odd!")
	if err := os.Mkdir(odd, 0o755); err != nil {
		t.Fatal(err)
	}
	plain := writeTemp(t, odd, "m.pte", []byte("x"))
	for _, c := range []struct {
		arg, archive, entry string
		ok                  bool
	}{
		{zp + "!/assets/m.pte", zp, "assets/m.pte", true},
		{zp + "!/a!/b", zp, "a!/b", true},
		{plain, "", "", false}, // an existing file whose path has "!/"
		{zp, "", "", false},
		{filepath.Join(dir, "none.zip") + "!/m.pte", "", "", false},
	} {
		a, e, ok := mmapfile.SplitArchivePath(c.arg)
		if a != c.archive || e != c.entry || ok != c.ok {
			t.Errorf("mmapfile.SplitArchivePath(%q) = %q, %q, %v; want %q, %q, %v", c.arg, a, e, ok, c.archive, c.entry, c.ok)
		}
	}
}
