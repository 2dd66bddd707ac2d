package bundle

import (
	"fmt"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

// Format registers bundled programs at init: loader opens the program a
// bundle embeds, as a *Program.
var Format = format.Registration{
	Name:       "bpte",
	Files:      "ExecuTorch bundled programs (.bpte), opened as the program they embed",
	Order:      "the embedded program's",
	Magic:      "\"BP..\" at offset 4",
	Sniff:      func(head []byte) bool { return len(head) >= 8 && string(head[4:6]) == "BP" },
	DataFormat: "ptd",
	Open: func(mf *mmapfile.File, c *format.Config) (format.Model, error) {
		data := make([]*ptd.File, 0, len(c.Data))
		for _, d := range c.Data {
			if f, ok := d.(*ptd.File); ok {
				data = append(data, f)
			}
		}
		return openProgram(mf, c.Name, pte.WithData(data...))
	},
}

func init() { format.Register(Format) }

// Program is the program a bundled program embeds, mapped in place: the
// embedded *pte.Program, whose offsets are relative to the program's first
// byte, and the bundle with its test suites.
type Program struct {
	*pte.Program
	Bundle *File
	pmf    *mmapfile.File
}

// openProgram opens the bundle in mf and the program it embeds, as a
// section of mf, with opts. Every test suite must name a method of the
// program. mf stays the caller's; Close closes the rest.
func openProgram(mf *mmapfile.File, name string, opts ...pte.Option) (*Program, error) {
	b, err := NewFile(mf)
	if err != nil {
		return nil, err
	}
	off, n := b.ProgramSection()
	var head [8]byte
	if k, _ := mf.ReadAt(head[:], off); !pte.Format.Sniff(head[:min(int64(k), n)]) {
		return nil, format.Errorf("bpte", "BundledProgram.program", off,
			"the embedded program (%d bytes at %d) is not an ExecuTorch program: bytes 4..8 are %q", n, off, head[4:])
	}
	if name == "" {
		name = "the file"
	}
	pmf, err := b.OpenProgram(mmapfile.WithName(fmt.Sprintf("%s (program at %d)", name, off)))
	if err != nil {
		return nil, err
	}
	p, err := pte.NewFile(pmf, opts...)
	if err != nil {
		pmf.Close()
		return nil, fmt.Errorf("the program in bundled program %s: %w", name, err)
	}
	for i, s := range b.TestSuites() {
		if _, ok := p.Method(s.Method); !ok {
			p.Close()
			pmf.Close()
			return nil, format.Errorf("bpte", fmt.Sprintf("BundledProgram.method_test_suites[%d].method_name", i), 0,
				"a test suite for method %q, which the embedded program does not have", s.Method)
		}
	}
	return &Program{Program: p, Bundle: b, pmf: pmf}, nil
}

// Unwrap returns the embedded program (format.Wrapper).
func (p *Program) Unwrap() format.Model { return p.Program }

// AuxTensors returns the bundle's test tensors (Bundle.Tensors), whose
// views point into the bundle's file.
func (p *Program) AuxTensors() []*format.Tensor { return p.Bundle.Tensors() }

// Close closes the program, its section and the bundle.
func (p *Program) Close() error {
	err := p.Program.Close()
	if err2 := p.pmf.Close(); err == nil {
		err = err2
	}
	if err2 := p.Bundle.Close(); err == nil {
		err = err2
	}
	return err
}

// Relayout refuses to lay a bundle out anew (format.Relayouter, which the
// embedded *pte.Program would otherwise lend it and relay out the program
// alone): a bundle's program is rewritten on its own, and put back into a
// bundle with ExecuTorch's tools.
func (p *Program) Relayout(format.RelayoutOptions) (*format.Layout, error) {
	return nil, fmt.Errorf("bpte: edgeload cannot rewrite a bundled program; repack the program it embeds instead")
}
