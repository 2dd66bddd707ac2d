package pte

import (
	"fmt"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/mmapfile"
)

// Format registers programs with package format at init. A program links
// the .ptd files given to loader.WithData.
var Format = format.Registration{
	Name:       "pte",
	Files:      "ExecuTorch programs (.pte)",
	Order:      "for each method, the order its instructions first use them",
	Magic:      "\"ET..\" at offset 4",
	Sniff:      func(head []byte) bool { return len(head) >= 8 && string(head[4:6]) == "ET" },
	DataFormat: "ptd",
	Open: func(mf *mmapfile.File, c *format.Config) (format.Model, error) {
		data := make([]*ptd.File, len(c.Data))
		for i, d := range c.Data {
			f, ok := d.(*ptd.File)
			if !ok {
				return nil, fmt.Errorf("pte: data file %d is a %T, not a .ptd file", i, d)
			}
			data[i] = f
		}
		return newProgram(mf, options{head: c.Head, name: c.Name, data: data})
	},
}

func init() { format.Register(Format) }

// TensorAt returns &Tensors()[i].Tensor; the first call builds the tensor
// list.
func (p *Program) TensorAt(i int) *format.Tensor { return &p.all()[i].Tensor }

// Lookup returns the index in Tensors of the tensor Tensor(name) returns.
func (p *Program) Lookup(name string) (int, bool) {
	p.indexOnce.Do(p.buildIndex)
	return p.tensorIdx.Lookup(name)
}

// Groups returns the names of the program's methods, in file order.
func (p *Program) Groups() []string {
	ms := p.methodList()
	names := make([]string, len(ms))
	for i := range ms {
		names[i] = ms[i].Name
	}
	return names
}

// Check verifies every method's instructions (VerifyMethods), which Open
// leaves to each method's first use.
func (p *Program) Check() error { return p.VerifyMethods() }

// GroupBlobs returns the payloads of the delegates the named method calls
// ("" for every method), in delegate order: what a backend reads at load,
// before the method's tensors.
func (p *Program) GroupBlobs(method string) []format.Blob {
	var out []format.Blob
	for _, meth := range p.methodList() {
		if method != "" && meth.Name != method {
			continue
		}
		for _, di := range meth.Delegates {
			d := p.delegates[di]
			out = append(out, format.Blob{Name: fmt.Sprintf("delegate %s/%d", meth.Name, d.Index), Index: di, Data: d.Data})
		}
	}
	return out
}
