package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/ziptest"
)

func TestRepackCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.pte")
	ptd := filepath.Join(dir, "w.ptd")
	code, stdout, stderr := runCmd("repack", "--align", "16K", "--tensor-align", "4096", "--externalize", ptd, fixture("tiny.pte"), out)
	if code != exitOK || !strings.HasPrefix(stdout, "ok    "+out+": pte,") || stderr != "" {
		t.Fatalf("repack: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, _ = runCmd("inspect", "--data", ptd, out)
	if code != exitOK || !strings.Contains(stdout, "external ("+ptd+")") {
		t.Errorf("inspect --data of the output: exit %d\n%s", code, stdout)
	}
	code, stdout, stderr = runCmd("repack", "--check", "--data", ptd, fixture("tiny.pte"), out)
	if code != exitOK || !strings.Contains(stdout, "hold the same tensors") {
		t.Errorf("repack --check: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// Different tensors: every difference is printed, exit 1.
	code, stdout, stderr = runCmd("repack", "--check", fixture("tiny.pte"), fixture("tiny-v2.rten"))
	if code != exitInvalid || !strings.Contains(stdout, "forward/values/2: only in A\n") || !strings.Contains(stdout, "linear.weight: shape [3 2] != [2 3]\n") {
		t.Errorf("repack --check of different files: exit %d, stdout %q", code, stdout)
	}
	checkFailLine(t, stderr)

	v2 := filepath.Join(t.TempDir(), "v2.rten")
	code, stdout, stderr = runCmd("repack", "--rten-v2", "--verify-bytes", fixture("tiny-v1.rten"), v2)
	if code != 0 || !strings.Contains(stdout, "rten") {
		t.Fatalf("repack --rten-v2: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if b, err := os.ReadFile(v2); err != nil || !strings.HasPrefix(string(b), "RTEN") {
		t.Errorf("repack --rten-v2 wrote no V2 file: %v", err)
	}
	code, stdout, stderr = runCmd("repack", "--check", fixture("tiny-v1.rten"), v2)
	if code != 0 {
		t.Errorf("repack --check V1 against its V2: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestRepackCommandErrors(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(fixture("tiny.pte"))
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in.pte")
	if err := os.WriteFile(in, src, 0o644); err != nil {
		t.Fatal(err)
	}
	trunc := filepath.Join(dir, "trunc.pte")
	if err := os.WriteFile(trunc, src[:len(src)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "junk.bin")
	if err := os.WriteFile(junk, []byte("not a model file, not even RTen V1......"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.pte")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(dir)
	names := func(es []os.DirEntry) []string {
		var s []string
		for _, e := range es {
			s = append(s, e.Name())
		}
		return s
	}
	for _, args := range [][]string{
		{trunc, filepath.Join(dir, "o1.pte")},
		{junk, filepath.Join(dir, "o2.pte")},
		{in, filepath.Join(dir, "missing", "o3.pte")},
		{in, in},
		{in, link},
	} {
		code, stdout, stderr := runCmd(append([]string{"repack"}, args...)...)
		if code != exitInvalid || stdout != "" {
			t.Errorf("repack %v: exit %d, stdout %q", args, code, stdout)
		}
		checkFailLine(t, stderr)
		if after, _ := os.ReadDir(dir); !slices.Equal(names(after), names(before)) {
			t.Errorf("repack %v left %v", args, names(after))
		}
	}
	for _, args := range [][]string{
		{in},
		{"--align", "1000", in, filepath.Join(dir, "o.pte")},
		{"--align", "x", in, filepath.Join(dir, "o.pte")},
		{"--align", "0", in, filepath.Join(dir, "o.pte")},
		{"--tensor-align", "0", in, filepath.Join(dir, "o.pte")},
		{"--quick", in, filepath.Join(dir, "o.pte")},
	} {
		code, _, _ := runCmd(append([]string{"repack"}, args...)...)
		if want := exitUsage; args[0] == "--align" && args[1] == "1000" {
			want = exitInvalid
			if code != want {
				t.Errorf("repack %v: exit %d, want %d", args, code, want)
			}
		} else if code != want {
			t.Errorf("repack %v: exit %d, want %d", args, code, want)
		}
	}
}

func TestProgressLine(t *testing.T) {
	var b strings.Builder
	p := progressLine(&b)
	for done := int64(0); done <= 1000; done += 7 {
		p(done, 1000)
	}
	p(1000, 1000)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 10 || lines[0] != "edgeload: repack: 10% (105 of 1000 bytes)" || !strings.HasPrefix(lines[9], "edgeload: repack: 100% ") {
		t.Errorf("progress lines:\n%s", b.String())
	}
}

// TestRepackSummary: repack's summary line gives the output's real
// segment and tensor counts, which for every real file are the input's
// (each format's relayout keeps its segments), as the independent reader
// lists them.
func TestRepackSummary(t *testing.T) {
	for _, in := range testmodels.All(t) {
		if strings.HasSuffix(in, ".bpte") {
			continue
		}
		exp := testmodels.Load(t, in)
		out := filepath.Join(t.TempDir(), filepath.Base(in))
		code, stdout, stderr := runCmd("repack", "--align", "4096", in, out)
		want := fmt.Sprintf(", %d segment(s), %d tensor(s)\n", len(exp.Segments), len(exp.Tensors))
		if code != exitOK || !strings.HasSuffix(stdout, want) {
			t.Errorf("repack %s: exit %d, stdout %q, stderr %q; want a line ending %q", filepath.Base(in), code, stdout, stderr, want)
		}
	}
}

// repack takes ARCHIVE!/ENTRY as inspect does: every real model stored in
// a zip at an odd offset repacks from the entry to the bytes it repacks
// to from the file, and --check takes the entry too.
func TestRepackZipEntry(t *testing.T) {
	for _, path := range testmodels.All(t) {
		if strings.HasSuffix(path, ".bpte") {
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			archive, _, err := ziptest.Model(b)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			entry := writeTemp(t, dir, "app.apk", archive) + "!/" + ziptest.Stored
			fromFile, fromEntry := filepath.Join(dir, "file.out"), filepath.Join(dir, "entry.out")
			if code, _, stderr := runCmd("repack", "--align", "4096", path, fromFile); code != exitOK {
				t.Skipf("the file does not repack: %s", stderr)
			}
			if code, stdout, stderr := runCmd("repack", "--align", "4096", entry, fromEntry); code != exitOK {
				t.Fatalf("repack of the entry: exit %d, %q %q", code, stdout, stderr)
			}
			if a, b := mustReadFile(t, fromFile), mustReadFile(t, fromEntry); !bytes.Equal(a, b) {
				t.Errorf("the entry repacks to %d bytes, the file to %d others", len(b), len(a))
			}
			if code, stdout, stderr := runCmd("repack", "--check", entry, fromEntry); code != exitOK {
				t.Errorf("repack --check of the entry: exit %d, %q %q", code, stdout, stderr)
			}
			if code, _, stderr := runCmd("repack", entry, filepath.Join(dir, "app.apk")); code != exitInvalid || !strings.Contains(stderr, "output is the input file") {
				t.Errorf("repack over its own archive: exit %d, %q", code, stderr)
			}
		})
	}
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRepackGGUFRealign repacks each real GGUF file to --align 64 (which
// writes general.alignment) and that output again to 16K: gguf-py reads
// the second output with alignment 16384, every tensor on it, each with
// the bytes the independent reader gives it. The GGUF writer must change
// an existing general.alignment, not only add a missing one.
func TestRepackGGUFRealign(t *testing.T) {
	if err := exec.Command("python3", "-c", "import gguf").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 with gguf is required under CI=true: %v", err)
		}
		t.Skipf("python3 with the gguf package not available: %v", err)
	}
	const script = `
import sys, json, hashlib, gguf
r = gguf.GGUFReader(sys.argv[1])
f = r.fields.get("general.alignment")
out = {"alignment": int(f.parts[f.data[0]][0]) if f else None, "tensors": {}}
for t in r.tensors:
    out["tensors"][t.name] = [str(t.data_offset), hashlib.sha256(t.data.tobytes()).hexdigest()]
print(json.dumps(out))
`
	n := 0
	for _, in := range testmodels.Files(t, "gguf") {
		exp := testmodels.Load(t, in)
		if exp.ExitCode != 0 || len(exp.Tensors) == 0 {
			continue
		}
		n++
		dir := t.TempDir()
		mid, out := filepath.Join(dir, "64.gguf"), filepath.Join(dir, "16k.gguf")
		for _, step := range [][3]string{{"64", in, mid}, {"16K", mid, out}} {
			if code, stdout, stderr := runCmd("repack", "--align", step[0], step[1], step[2]); code != exitOK {
				t.Fatalf("%s: repack --align %s: exit %d, %q %q", filepath.Base(in), step[0], code, stdout, stderr)
			}
		}
		if err := exec.Command("python3", "-c", script, in).Run(); err != nil {
			t.Logf("%s: gguf-py does not read the original either: skipped", filepath.Base(in))
			continue
		}
		js, err := exec.Command("python3", "-c", script, out).Output()
		if err != nil {
			t.Fatalf("%s: gguf-py: %v", filepath.Base(in), err)
		}
		var got struct {
			Alignment *int64               `json:"alignment"`
			Tensors   map[string][2]string `json:"tensors"`
		}
		if err := json.Unmarshal(js, &got); err != nil {
			t.Fatal(err)
		}
		if got.Alignment == nil || *got.Alignment != 16384 {
			t.Errorf("%s: gguf-py reads general.alignment %v, want 16384", filepath.Base(in), got.Alignment)
		}
		for _, tn := range exp.Tensors {
			g, ok := got.Tensors[tn.Name]
			var off int64
			fmt.Sscan(g[0], &off)
			if !ok || g[1] != tn.SHA256 || off%16384 != 0 {
				t.Errorf("%s: tensor %s: gguf-py reads %v, want sha %s on 16384", filepath.Base(in), tn.Name, g, tn.SHA256)
			}
		}
	}
	if n == 0 {
		t.Error("no real GGUF file with tensors")
	}
}
