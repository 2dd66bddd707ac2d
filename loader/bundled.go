package loader

import (
	"fmt"

	"github.com/edgeload/edgeload/loader/bundle"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
)

// newBundled opens the program a bundled program in mf embeds, mapped in
// place as a section of mf (which the Model then owns).
func newBundled(mf *mmapfile.File, name string, c *config) (*Model, error) {
	b, err := bundle.NewFile(mf)
	if err != nil {
		return nil, err
	}
	off, n := b.ProgramSection()
	var head [SniffLen]byte
	if k, _ := mf.ReadAt(head[:], off); Sniff(head[:min(int64(k), n)]) != PTE {
		return nil, format.Errorf("bpte", "BundledProgram.program", off,
			"the embedded program (%d bytes at %d) is not an ExecuTorch program: bytes 4..8 are %q", n, off, head[4:])
	}
	pmf, err := b.OpenProgram(mmapfile.WithName(fmt.Sprintf("%s (program at %d)", displayName(name), off)))
	if err != nil {
		return nil, err
	}
	m, err := newModel(pmf, name, c)
	if err != nil {
		pmf.Close()
		return nil, fmt.Errorf("the program in bundled program %s: %w", displayName(name), err)
	}
	for i, s := range b.TestSuites() {
		if _, ok := m.prog.Method(s.Method); !ok {
			m.Close()
			return nil, format.Errorf("bpte", fmt.Sprintf("BundledProgram.method_test_suites[%d].method_name", i), 0,
				"a test suite for method %q, which the embedded program does not have", s.Method)
		}
	}
	m.bundle, m.outer = b, mf
	return m, nil
}

// Bundle returns the bundled program a model came from (its test suites),
// or nil if the model was not opened from a .bpte. The Model's file,
// offsets and Size are then the embedded program's: the bundle's own
// offsets (test tensors' included) are in Bundle().File().
func (m *Model) Bundle() *bundle.File { return m.bundle }

// verifyBundle checks and reads every test tensor of the bundle, and that
// every suite names a method of the program.
func (m *Model) verifyBundle(r *VerifyReport, fail func(string, ...any), read func(t *format.Tensor)) {
	if m.bundle == nil {
		return
	}
	for _, s := range m.bundle.TestSuites() {
		if m.prog != nil {
			if _, ok := m.prog.Method(s.Method); !ok {
				fail("bundle: test suite for method %q, which the program does not have", s.Method)
			}
		}
	}
	size := m.outer.Len()
	for _, t := range m.bundle.Tensors() {
		r.TestTensors++
		_, nbytes, ok := format.Numel(t.Shape, t.DType, size)
		switch {
		case !t.DType.Valid() || !ok || nbytes != t.NBytes:
			fail("bundle: test tensor %q: shape %v of %v does not give its %d bytes", t.Name, t.Shape, t.DType, t.NBytes)
		case t.Data.File() != m.outer || t.Data.Offset() != t.Offset || t.Data.Len() != t.NBytes:
			fail("bundle: test tensor %q: view [%d, +%d) does not match offset %d and nbytes %d", t.Name, t.Data.Offset(), t.Data.Len(), t.Offset, t.NBytes)
		default:
			read(t)
		}
	}
}
