package signing

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSingleFileNames checks the names a single-file model's statement
// may give its file: "." (model-signing 1.1.1) or its base name (the spec).
func TestSingleFileNames(t *testing.T) {
	data := randBytes(5000, 9)
	dir := writeModel(t, map[string][]byte{"m.gguf": data})
	path := filepath.Join(dir, "m.gguf")
	for _, c := range []struct {
		name  string
		shard int64
		want  error
	}{{".", 0, nil}, {"m.gguf", 0, nil}, {".", 1000, nil}, {"m.gguf", 1000, nil}, {"other.gguf", 0, ErrMissing}} {
		m, err := parseStatement(statement(t, map[string][]byte{c.name: data}, []string{c.name}, c.shard, nil))
		if err != nil {
			t.Fatal(err)
		}
		md, err := m.Model(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.VerifyModel(context.Background(), md, nil); c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("resource %q, shards %d: %v, want %v", c.name, c.shard, err, c.want)
		}
		// The same bytes through a reader (an archive entry).
		rm := NewFileModel("assets/m.gguf", strings.NewReader(string(data)), int64(len(data)))
		if _, err := m.VerifyModel(context.Background(), rm, nil); c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("resource %q from a reader: %v, want %v", c.name, err, c.want)
		}
	}
	// A folder is not a single-file model: "." names no file of it.
	m, _ := parseStatement(statement(t, map[string][]byte{".": data}, []string{"."}, 0, nil))
	md, err := m.Model(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.VerifyModel(context.Background(), md, nil); !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "single-file") {
		t.Errorf("a single-file signature on a folder: %v", err)
	}
}

// TestModelListing checks what a folder model may hold.
func TestModelListing(t *testing.T) {
	files := map[string][]byte{"a.bin": randBytes(10, 1)}
	st := func(allow bool) *Manifest {
		m, err := parseStatement(statement(t, files, []string{"a.bin"}, 0, func(st map[string]any) {
			st["predicate"].(map[string]any)["serialization"].(map[string]any)["allow_symlinks"] = allow
		}))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	t.Run("empty folder", func(t *testing.T) {
		if _, err := st(false).Model(t.TempDir()); !errors.Is(err, ErrMissing) {
			t.Errorf("%v, want ErrMissing", err)
		}
	})
	t.Run("not UTF-8", func(t *testing.T) {
		dir := writeModel(t, files)
		if err := os.WriteFile(filepath.Join(dir, "bad\xff.bin"), nil, 0o644); err != nil {
			t.Skip("the file system refuses the name:", err)
		}
		if _, err := st(false).Model(dir); !errors.Is(err, ErrUnsigned) || !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("%v, want a refusal naming UTF-8", err)
		}
	})
	t.Run("broken link", func(t *testing.T) {
		dir := writeModel(t, files)
		os.Symlink("nowhere", filepath.Join(dir, "l"))
		if _, err := st(true).Model(dir); !errors.Is(err, ErrMissing) {
			t.Errorf("allowed: %v, want ErrMissing", err)
		}
		if _, err := st(false).Model(dir); !errors.Is(err, ErrUnsigned) {
			t.Errorf("refused: %v, want ErrUnsigned", err)
		}
	})
	t.Run("root link", func(t *testing.T) {
		dir := writeModel(t, files)
		link := filepath.Join(t.TempDir(), "model")
		os.Symlink(dir, link)
		m := st(false)
		md, err := m.Model(link)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.VerifyModel(context.Background(), md, nil); err != nil {
			t.Error(err)
		}
	})
	t.Run("git names", func(t *testing.T) {
		m, err := parseStatement(statement(t, files, []string{"a.bin"}, 0, func(st map[string]any) {
			delete(st["predicate"].(map[string]any)["serialization"].(map[string]any), "ignore_paths")
		}))
		if err != nil {
			t.Fatal(err)
		}
		dir := writeModel(t, map[string][]byte{"a.bin": files["a.bin"], ".git/HEAD": nil, ".github/ci.yml": nil, ".gitignore": nil, ".gitattributes": nil})
		md, err := m.Model(dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.VerifyModel(context.Background(), md, nil); err != nil {
			t.Errorf("top-level git files: %v", err)
		}
		os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
		os.WriteFile(filepath.Join(dir, "sub", ".gitignore"), nil, 0o644)
		md, err = m.Model(dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.VerifyModel(context.Background(), md, nil); !errors.Is(err, ErrUnsigned) || !strings.Contains(err.Error(), "sub/.gitignore") {
			t.Errorf("a subfolder's .gitignore: %v, want it unsigned", err)
		}
	})
	t.Run("extra ignore", func(t *testing.T) {
		dir := writeModel(t, map[string][]byte{"a.bin": files["a.bin"], "sig/model.sig": []byte("{}"), "x.sig": nil})
		m := st(false)
		md, err := m.Model(dir, "sig", "./x.sig", "../outside", "/abs")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.VerifyModel(context.Background(), md, nil); err != nil {
			t.Error(err)
		}
	})
}
