package ptn

import (
	"bytes"
	"fmt"
	"io"
	"strconv"

	"github.com/edgeload/edgeload/loader/format"
)

// UseOrder returns the indices of the tensors a method binds, in the
// order it first reads them: its top-level nodes in order, each
// non-placeholder node reading the constants its tensor, tensor-list and
// (present) optional-tensor-list arguments name, each constant as its data
// key then its quantization keys. The method's constants no node reads
// follow in declaration order (FORMATS-safetensors-ptn.md §7); tensors
// only other methods bind are not listed. Subgraphs have names of their
// own and read no method constant.
//
// Group "" gives every method's order in turn, each tensor once, then the
// tensors no method binds, in tensor order; a method the program lacks
// wraps format.ErrNotFound. UseOrder allocates its result.
func (f *File) UseOrder(group string) ([]int, error) {
	ms := f.methods
	if group != "" {
		i, ok := f.methodIx.Lookup(group)
		if !ok {
			return nil, format.Wrapf(format.ErrNotFound, formatName, "", -1, "no method %q", group)
		}
		ms = ms[i : i+1]
	}
	listed := make([]bool, len(f.tensors))
	order := make([]int, 0, len(f.tensors))
	add := func(i int) {
		if !listed[i] {
			listed[i] = true
			order = append(order, i)
		}
	}
	addConst := func(c *Constant) {
		add(c.Tensor)
		for _, k := range c.QuantKeys {
			if i, ok := f.index.Lookup(k); ok {
				add(i)
			}
		}
	}
	for mi := range ms {
		m := &ms[mi]
		for _, ci := range m.reads {
			addConst(&m.Constants[ci])
		}
		for ci := range m.Constants {
			addConst(&m.Constants[ci])
		}
	}
	if group == "" {
		for i := range f.tensors {
			add(i)
		}
	}
	return order, nil
}

// ReportFields returns the JSON report's "version", "methods" (each with
// its constants' keys, the mutated ones, and its mutable buffers),
// "aliases" (alias to owner) and "header_size" of program.safetensors
// when the package has one.
func (f *File) ReportFields() []format.Field {
	type buffer struct {
		Name string `json:"name"`
		FQN  string `json:"fqn"`
	}
	type method struct {
		Name           string   `json:"name"`
		Constants      []string `json:"constants"`
		Mutated        []string `json:"mutated_constants"`
		MutableBuffers []buffer `json:"mutable_buffers"`
	}
	ms := make([]method, len(f.methods))
	for i := range f.methods {
		m := &f.methods[i]
		o := method{Name: m.Name, Constants: []string{}, Mutated: []string{}, MutableBuffers: []buffer{}}
		for _, c := range m.Constants {
			o.Constants = append(o.Constants, c.DataKey)
			if c.Mutated {
				o.Mutated = append(o.Mutated, c.DataKey)
			}
		}
		for _, b := range m.MutableBuffers {
			o.MutableBuffers = append(o.MutableBuffers, buffer(b))
		}
		ms[i] = o
	}
	aliases := map[string]string{}
	for i := f.owners; i < len(f.tensors); i++ {
		aliases[f.tensors[i].Name] = f.tensors[f.aliasOf[i-f.owners]].Name
	}
	fields := []format.Field{{Key: "version", Value: f.version}, {Key: "methods", Value: ms}, {Key: "aliases", Value: aliases}}
	if f.hsize >= 0 {
		fields = append(fields, format.Field{Key: "header_size", Value: f.hsize})
	}
	return fields
}

// ReportText writes the members and each method's bindings.
func (f *File) ReportText(w io.Writer) error {
	var b bytes.Buffer
	for _, m := range f.members {
		fmt.Fprintf(&b, "member %s: %d bytes at %d\n", m.Name, m.Size, m.Offset)
	}
	if n := len(f.tensors) - f.owners; n > 0 {
		fmt.Fprintf(&b, "%d aliases share another key's bytes\n", n)
	}
	for i := range f.methods {
		m := &f.methods[i]
		mut := 0
		for _, c := range m.Constants {
			if c.Mutated {
				mut++
			}
		}
		fmt.Fprintf(&b, "method %s: %d constants (%d mutated), %d read by its nodes, %d mutable buffers\n",
			strconv.Quote(m.Name), len(m.Constants), mut, len(m.reads), len(m.MutableBuffers))
	}
	_, err := w.Write(b.Bytes())
	return err
}

var _ format.Reporter = (*File)(nil)
