package repack

import (
	"fmt"

	"github.com/edgeload/edgeload/loader/format"
)

// relayout rewrites a model whose format lays itself out anew
// (format.Relayouter): its head, then each piece copied from the input.
func (r *run) relayout(outs *outputs, out string, res *Result) error {
	rl, ok := r.m.Impl().(format.Relayouter)
	if !ok {
		return fmt.Errorf("repack: edgeload cannot rewrite %s files", r.m.Format())
	}
	l, err := rl.Relayout(r.align)
	if err != nil {
		return err
	}
	for _, p := range l.Pieces {
		r.total += p.Data.Len()
	}
	w, err := outs.create(out)
	if err != nil {
		return err
	}
	if err := w.write(l.Head); err != nil {
		return err
	}
	for _, p := range l.Pieces {
		if err := w.padTo(p.Offset); err != nil {
			return err
		}
		if err := w.copySeg(r, p.Data); err != nil {
			return err
		}
	}
	if err := w.padTo(l.Size); err != nil {
		return err
	}
	res.Size, res.Segments, res.Tensors = l.Size, 1, len(l.Pieces)
	return nil
}
