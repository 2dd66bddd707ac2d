package repack

import (
	"fmt"
	"path/filepath"

	"github.com/edgeload/edgeload/loader/format"
)

// writeLayout writes l to out and its other files beside it or where
// they are named. An output with files beside it is written to a
// temporary directory with them, so that it finds them by name when it
// is read back.
func (r *run) writeLayout(outs *outputs, out string, res *Result, l *format.Layout) error {
	dir := ""
	dsts := make([]string, len(l.Files))
	for _, ll := range append([]format.LayoutFile{{Layout: l}}, l.Files...) {
		for _, p := range ll.Pieces {
			r.total += p.Data.Len()
		}
	}
	for i, f := range l.Files {
		dsts[i] = f.Name
		if !filepath.IsAbs(f.Name) {
			if f.Name != filepath.Base(f.Name) || f.Name == "." || f.Name == ".." {
				return fmt.Errorf("%w: output file %q is not a name in the output's directory", errInternal, f.Name)
			}
			dsts[i] = filepath.Join(filepath.Dir(out), f.Name)
			if dir == "" {
				var err error
				if dir, err = outs.tempDir(out); err != nil {
					return err
				}
			}
		}
		for _, in := range r.inputs {
			if err := notSame(in, dsts[i]); err != nil {
				return err
			}
		}
	}
	n, err := r.writeFile(outs, out, dir, l)
	if err != nil {
		return err
	}
	res.Size = n
	for i, f := range l.Files {
		tdir := ""
		if !filepath.IsAbs(f.Name) {
			tdir = dir
		}
		n, err := r.writeFile(outs, dsts[i], tdir, f.Layout)
		if err != nil {
			return err
		}
		if f.Link {
			outs.files[len(outs.files)-1].link = true
			res.DataSize += n
		} else {
			res.Size += n
		}
	}
	return nil
}

// writeFile writes l to a temporary file for dst (in dir when set): its
// head, then each piece copied from the input, zeros between them. It
// returns the size written.
func (r *run) writeFile(outs *outputs, dst, dir string, l *format.Layout) (int64, error) {
	w, err := outs.create(dst, dir)
	if err != nil {
		return 0, err
	}
	if err := w.write(l.Head); err != nil {
		return 0, err
	}
	for _, p := range l.Pieces {
		if err := w.padTo(p.Offset); err != nil {
			return 0, err
		}
		if err := w.copySeg(r, p.Data); err != nil {
			return 0, err
		}
	}
	if err := w.padTo(l.Size); err != nil {
		return 0, err
	}
	return w.pos, nil
}
