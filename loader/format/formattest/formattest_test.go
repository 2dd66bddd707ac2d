package formattest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/toyformat"
	"github.com/edgeload/edgeload/loader/format/formattest"
)

// writeToy writes a toy file of three tensors with the fault given ('1'
// for none) and returns its path.
func writeToy(t *testing.T, fault byte) string {
	t.Helper()
	b := toyformat.WriteFaulty(fault, []string{"a", "b", "c"}, [][]float32{{1, 2}, {3}, {4, 5, 6}})
	path := filepath.Join(t.TempDir(), "m.toy")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestToy: the toy format keeps the contract.
func TestToy(t *testing.T) {
	if err := formattest.TestFile(writeToy(t, '1')); err != nil {
		t.Error(err)
	}
}

// TestToyFaults: a toy file that breaks one item of the contract fails the
// kit, which names that item.
func TestToyFaults(t *testing.T) {
	want := map[byte][]string{
		'L': {`lookup: Lookup("a") = 1, true; want 0`},
		'O': {`use order: UseOrder("") names tensor 2 "c" twice`},
		'E': {"error: a *errors.errorString, not a *format.FormatError"},
		'C': {"close: a second Close: toy: closed twice"},
		'D': {`view: tensor 0 "a": a view of "", which is none of the model's files`, "verify: Verify: "},
	}
	for _, fault := range []byte(toyformat.Faults) {
		err := formattest.TestFile(writeToy(t, fault))
		if err == nil {
			t.Errorf("fault %c: the kit finds nothing", fault)
			continue
		}
		for _, w := range want[fault] {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("fault %c: the kit's error does not say %q:\n%v", fault, w, err)
			}
		}
	}
}
