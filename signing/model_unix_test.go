//go:build unix

package signing

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestModelFifo checks that a folder model holding a named pipe is refused.
func TestModelFifo(t *testing.T) {
	files := map[string][]byte{"a.bin": randBytes(10, 1)}
	m, err := parseStatement(statement(t, files, []string{"a.bin"}, 0, nil))
	if err != nil {
		t.Fatal(err)
	}
	dir := writeModel(t, files)
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Skip(err)
	}
	if _, err := m.Model(dir); !errors.Is(err, ErrUnsigned) || !strings.Contains(err.Error(), "pipe") {
		t.Errorf("%v, want a refusal naming pipe", err)
	}
}
