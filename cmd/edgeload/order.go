package main

import (
	"fmt"
	"io"

	"github.com/edgeload/edgeload/loader"
)

// useOrderRep is the "use_order" of inspect --json: for each method of a
// program, in file order, the names of its weights in the order the method
// first uses them (loader.Model.UseOrder); for an RTen model and a .ptd a
// single order under the key "", the method name UseOrder takes for them.
type useOrderRep []methodOrder

// methodOrder is one method's use order, as tensor indices and names.
type methodOrder struct {
	Method  string
	Tensors []int
	Names   []string
}

// MarshalJSON writes the orders as an object from method to names, keys in
// order.
func (u useOrderRep) MarshalJSON() ([]byte, error) {
	f := make(orderedFields, len(u))
	for i, o := range u {
		f[i] = field{o.Method, o.Names}
	}
	return f.MarshalJSON()
}

// useOrders computes the use order of each method of m (one order for a
// file without methods).
func useOrders(m *loader.Model) (useOrderRep, error) {
	methods := []string{""}
	if p := m.Program(); p != nil {
		methods = methods[:0]
		for _, pm := range p.Methods() {
			methods = append(methods, pm.Name)
		}
	}
	out := make(useOrderRep, 0, len(methods))
	for _, name := range methods {
		order, err := m.UseOrder(name)
		if err != nil {
			return nil, err
		}
		o := methodOrder{Method: name, Tensors: order, Names: make([]string, len(order))}
		for k, i := range order {
			o.Names[k] = m.TensorAt(i).Name
		}
		out = append(out, o)
	}
	return out, nil
}

// printUseOrder writes the text output of inspect --order: for each method
// (or the file's one order) its weights in use order, with where each
// lives.
func printUseOrder(w io.Writer, m *loader.Model, u useOrderRep) {
	for _, o := range u {
		title := "use order"
		if o.Method != "" {
			title += " of " + o.Method
		}
		section(w, title, len(o.Tensors))
		if len(o.Tensors) == 0 {
			continue
		}
		tw := newTable(w)
		fmt.Fprintf(tw, "  #\tNAME\tOFFSET\tNBYTES\n")
		for k, i := range o.Tensors {
			t := m.TensorAt(i)
			off := "-"
			if t.Resolved() {
				off = fmt.Sprint(t.Offset)
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%d\n", k, t.Name, off, t.NBytes)
		}
		tw.Flush()
	}
}
