package main

import (
	"fmt"
	"io"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
)

// useOrders computes the use order of each of m's groups (a program's
// methods), in file order; a model without groups has one order, under the
// group "". A model whose order ends with tensors nothing reads
// (format.UsedOrderer) gives the order without them. In the JSON of inspect
// the orders are "use_order": group name to tensor names.
func useOrders(m *loader.Model) ([]groupOrder, error) {
	groups := m.Groups()
	if groups == nil {
		groups = []string{""}
	}
	get := m.UseOrder
	if u, ok := m.Impl().(format.UsedOrderer); ok {
		get = u.UsedOrder
	}
	out := make([]groupOrder, 0, len(groups))
	for _, g := range groups {
		order, err := get(g)
		if err != nil {
			return nil, err
		}
		out = append(out, groupOrder{group: g, order: order})
	}
	return out, nil
}

// printUseOrder writes the text output of inspect --order: for each group
// (or the file's one order) its tensors in use order, with where each
// lives.
func printUseOrder(w io.Writer, m *loader.Model, orders []groupOrder) {
	for _, o := range orders {
		title := "use order"
		if o.group != "" {
			title += " of " + o.group
		}
		section(w, title, len(o.order))
		if len(o.order) == 0 {
			continue
		}
		tw := newTable(w)
		fmt.Fprintf(tw, "  #\tNAME\tOFFSET\tNBYTES\n")
		for k, i := range o.order {
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
