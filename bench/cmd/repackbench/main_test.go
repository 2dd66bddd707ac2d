package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/repack"
)

func TestRun(t *testing.T) {
	if _, err := exec.LookPath("cp"); err != nil {
		t.Skip("no cp:", err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "tiny.pte")
	b, err := os.ReadFile(filepath.Join(testmodels.Root(), "testdata", "tiny.pte"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(&out, in, "", 2, repack.Options{Align: 4096}); err != nil {
		t.Fatal(err)
	}
	var res result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if res.Size != int64(len(b)) || len(res.CP) != 2 || len(res.Repack) != 2 || len(res.Sync) != 2 || res.Ratio <= 0 {
		t.Errorf("result %+v", res)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("%d files left in %s", len(es), dir)
	}
}
