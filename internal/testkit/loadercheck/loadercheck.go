// Package loadercheck exercises every accessor and view of a loader.Model,
// for the tests of package loader and of the layers above it. It sits apart
// from ptecheck, ptdcheck and rtencheck, whose per-format checks the format
// packages' own tests use, so that those tests do not import package
// loader, which is above them.
package loadercheck

import (
	"errors"
	"fmt"

	_ "github.com/edgeload/edgeload/formats" // every built-in format
	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/hostile/ptdcheck"
	"github.com/edgeload/edgeload/internal/testkit/hostile/ptecheck"
	"github.com/edgeload/edgeload/internal/testkit/hostile/rtencheck"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/loader/rten"
	"github.com/edgeload/edgeload/loader/tflite"
)

// Model exercises every accessor of a loader.Model and, through loader.As,
// for a program, a .ptd or an RTen model, every accessor and view of the format's own value; then
// Verify, which must accept any file Open accepted whose methods pass their
// check (a program's instructions are checked at each method's first use).
func Model(m *loader.Model) error {
	_ = m.Format().String()
	_, _, _ = m.Name(), m.PageSize(), m.Mode()
	if m.File() == nil || m.Size() != m.File().Len() {
		return errors.New("loader: File/Size")
	}
	var err error
	if p, ok := loader.As[*pte.Program](m); ok {
		if m.Format() != "pte" && m.Format() != "bpte" {
			return fmt.Errorf("loader: a program opened as %v", m.Format())
		}
		err = ptecheck.Program(p)
	} else if f, ok := loader.As[*ptd.File](m); ok {
		if m.Format() != "ptd" {
			return fmt.Errorf("loader: a .ptd opened as %v", m.Format())
		}
		err = ptdcheck.File(f)
	} else if r, ok := loader.As[*rten.Model](m); ok {
		if m.Format() != "rten" {
			return fmt.Errorf("loader: an RTen model opened as %v", m.Format())
		}
		err = rtencheck.Model(r)
	}
	if err != nil {
		return err
	}
	if m.NumTensors() != len(m.Tensors()) {
		return fmt.Errorf("loader: NumTensors %d, %d tensors", m.NumTensors(), len(m.Tensors()))
	}
	for i := range m.Tensors() {
		t := &m.Tensors()[i]
		if g, ok := m.Tensor(t.Name); !ok || g.Name != t.Name {
			return fmt.Errorf("loader: Tensor(%q) not found", t.Name)
		}
		if d := m.TensorData(i); !hostile.SameView(d, t.Data) || !hostile.SameView(d, m.TensorAt(i).Data) {
			return fmt.Errorf("loader: tensor %q: TensorData [%d, +%d), Data [%d, +%d)", t.Name, d.Offset(), d.Len(), t.Data.Offset(), t.Data.Len())
		}
		if err := hostile.Tensor(t); err != nil {
			return fmt.Errorf("loader: %w", err)
		}
	}
	if _, ok := m.Tensor("\x00no such tensor"); ok {
		return errors.New("loader: Tensor found a name no file holds")
	}
	for i, s := range m.Segments() {
		if err := hostile.Segment(fmt.Sprintf("segment %d", i), s); err != nil {
			return fmt.Errorf("loader: %w", err)
		}
	}
	for _, nd := range m.NamedData() {
		if err := hostile.NamedData(nd, len(m.Segments())); err != nil {
			return fmt.Errorf("loader: %w", err)
		}
	}
	_ = m.DataFiles()
	r, err := m.Verify()
	if p, ok := loader.As[*pte.Program](m); ok {
		// A program's instructions are checked at each method's first use,
		// not at Open: Verify must reject the file exactly when they fail.
		if merr := p.VerifyMethods(); merr != nil {
			if err == nil {
				return fmt.Errorf("loader: Verify accepts a program whose methods fail their check: %w", merr)
			}
			return nil
		}
	}
	if tm, ok := loader.As[*tflite.Model](m); ok {
		// A TFLite model's operators, quantization and sparsity tables are
		// verified at first use (Check), not at Open: Verify must reject
		// the file exactly when they fail.
		if cerr := tm.Check(); cerr != nil {
			if err == nil {
				return fmt.Errorf("loader: Verify accepts a TFLite model whose lazily verified tables fail: %w", cerr)
			}
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("loader: Open accepted the file but Verify rejects it: %w", err)
	}
	if r.Tensors != len(m.Tensors()) || r.Segments != len(m.Segments()) {
		return fmt.Errorf("loader: Verify counted %+v for %d tensors, %d segments", r, len(m.Tensors()), len(m.Segments()))
	}
	if _, _, err := m.Resident(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("loader: Resident: %w", err)
	}
	return nil
}

// RegionEnd returns the end of the header and FlatBuffer region of a
// valid file of any format (the part a sweep mutates), through the format
// packages' own RegionEnd. It tells the formats apart with loader.Sniff;
// whatever sniffs as neither PTE nor PTD is tried as RTen (a headerless V1
// model has no magic).
func RegionEnd(b []byte) (int64, error) {
	switch loader.Sniff(b) {
	case "pte":
		return ptecheck.RegionEnd(b)
	case "ptd":
		return ptdcheck.RegionEnd(b)
	}
	return rtencheck.RegionEnd(b)
}
