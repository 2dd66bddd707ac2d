package bench

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/exp/mmap"

	_ "github.com/edgeload/edgeload/formats" // every built-in format
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/loader/rten"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// Mode is a way of loading a model file.
type Mode string

// The loaders compared.
const (
	// ModeReadFile reads the whole file with os.ReadFile and parses the heap
	// copy (over mmapfile.NewBytes): the naive loader.
	ModeReadFile Mode = "readfile"
	// ModeXMmap maps the file with golang.org/x/exp/mmap and parses it
	// through its io.ReaderAt (mmapfile.NewReaderAt): every tensor view is a fresh
	// copy read from the mapping.
	ModeXMmap Mode = "xmmap"
	// ModeWhole is edgeload with the whole file mapped at Open.
	ModeWhole Mode = "whole"
	// ModeWindowed is edgeload mapping a window per range on demand.
	ModeWindowed Mode = "windowed"
)

// Modes lists the loaders in the order the benchmarks run them.
var Modes = []Mode{ModeReadFile, ModeXMmap, ModeWhole, ModeWindowed}

// ParseMode returns the Mode named s.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("bench: unknown mode %q (want readfile, xmmap, whole or windowed)", s)
}

// Mapped reports whether the mode maps the file with edgeload (views point
// into a mapping, Release works).
func (m Mode) Mapped() bool { return m == ModeWhole || m == ModeWindowed }

// Model is an opened model file (and its linked .ptd, if any), whatever the
// format and the loader.
type Model struct {
	mode    Mode
	path    string
	data    string
	lm      *loader.Model // Open
	prog    *pte.Program  // OpenPkg
	ptd     *ptd.File     // OpenPkg: the .ptd, alone or linked
	rt      *rten.Model   // OpenPkg
	closers []io.Closer
}

// Open opens the model file at path with the given loader through
// edgeload's public entry point, package loader: loader.Open for the whole
// and windowed modes, loader.NewBytes over the os.ReadFile copy for
// readfile, loader.NewReaderAt over an x/exp/mmap ReaderAt for xmmap. data,
// when not empty, names a .ptd file holding the program's external tensors:
// it is opened the same way and linked (loader.WithData, or WithDataFiles
// over mmapfile.NewBytes / mmapfile.NewReaderAt for the baselines).
//
// Open does the full verification edgeload does (every table, index and
// byte range) but touches no weight; the readfile loader has of course
// read the whole file, and the xmmap loader copies each tensor in Views.
func Open(path string, mode Mode, data string) (*Model, error) {
	m := &Model{mode: mode, path: path, data: data}
	var opts []loader.Option
	var err error
	switch mode {
	case ModeWhole, ModeWindowed:
		opts = append(opts, loader.WithMmapOptions(mmapMode(mode)))
		if data != "" {
			opts = append(opts, loader.WithData(data))
		}
		m.lm, err = loader.Open(path, opts...)
	case ModeReadFile:
		if data != "" {
			var db []byte
			if db, err = os.ReadFile(data); err != nil {
				break
			}
			opts = append(opts, loader.WithDataFiles(mmapfile.NewBytes(db)))
		}
		var b []byte
		if b, err = os.ReadFile(path); err == nil {
			m.lm, err = loader.New(mmapfile.NewBytes(b), opts...)
		}
	case ModeXMmap:
		if data != "" {
			var dr *mmap.ReaderAt
			if dr, err = m.xopen(data); err != nil {
				break
			}
			opts = append(opts, loader.WithDataFiles(mmapfile.NewReaderAt(dr, int64(dr.Len()))))
		}
		var r *mmap.ReaderAt
		if r, err = m.xopen(path); err == nil {
			m.lm, err = loader.New(mmapfile.NewReaderAt(r, int64(r.Len())), opts...)
		}
	default:
		err = fmt.Errorf("bench: unknown mode %q", mode)
	}
	if err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// OpenPkg is Open through the format packages directly (pte.NewFile,
// ptd.NewFile, rten.NewFile over mmapfile.Open, NewBytes or NewReaderAt),
// without package loader's sniffing and format-neutral index. The format comes from the
// extension (.pte, .ptd, .rten), or else from the file's first bytes.
func OpenPkg(path string, mode Mode, data string) (*Model, error) {
	m := &Model{mode: mode, path: path, data: data}
	kind, err := sniff(path)
	if err != nil {
		return nil, err
	}
	if data != "" {
		if kind != KindPTE {
			return nil, fmt.Errorf("bench: %s: a data file goes with a .pte, not a %s file", path, kind)
		}
		if m.ptd, err = openPTD(m, data, mode); err != nil {
			m.Close()
			return nil, err
		}
	}
	switch kind {
	case KindPTE:
		err = m.openPTE(path)
	case KindPTD:
		m.ptd, err = openPTD(m, path, mode)
	case KindRTen:
		err = m.openRTen(path)
	}
	if err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// sniff returns the format of the file at path, by extension or content.
func sniff(path string) (Kind, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".pte":
		return KindPTE, nil
	case ".ptd":
		return KindPTD, nil
	case ".rten":
		return KindRTen, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var b [8]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return "", fmt.Errorf("bench: %s: %w", path, err)
	}
	switch {
	case string(b[4:8]) == pte.Identifier:
		return KindPTE, nil
	case string(b[4:8]) == ptd.Identifier:
		return KindPTD, nil
	case string(b[0:4]) == rten.Magic:
		return KindRTen, nil
	}
	return "", fmt.Errorf("bench: %s: not a .pte, .ptd or V2 .rten file", path)
}

func mmapMode(mode Mode) mmapfile.Option {
	if mode == ModeWindowed {
		return mmapfile.WithMode(mmapfile.ModeWindowed)
	}
	return mmapfile.WithMode(mmapfile.ModeWhole)
}

// mopen maps path with mmapfile.Open in the mode's mapping mode,
// remembering to close it (after the model that reads it).
func (m *Model) mopen(path string, mode Mode) (*mmapfile.File, error) {
	mf, err := mmapfile.Open(path, mmapMode(mode))
	if err != nil {
		return nil, err
	}
	m.closers = append(m.closers, mf)
	return mf, nil
}

// xopen maps path with x/exp/mmap, remembering to close it.
func (m *Model) xopen(path string) (*mmap.ReaderAt, error) {
	r, err := mmap.Open(path)
	if err != nil {
		return nil, err
	}
	m.closers = append(m.closers, r)
	return r, nil
}

func (m *Model) openPTE(path string) error {
	var opts []pte.Option
	if m.ptd != nil {
		opts = append(opts, pte.WithData(m.ptd))
	}
	var err error
	switch m.mode {
	case ModeReadFile:
		var b []byte
		if b, err = os.ReadFile(path); err == nil {
			m.prog, err = pte.NewFile(mmapfile.NewBytes(b), append(opts, pte.WithName(path))...)
		}
	case ModeXMmap:
		var r *mmap.ReaderAt
		if r, err = m.xopen(path); err == nil {
			m.prog, err = pte.NewFile(mmapfile.NewReaderAt(r, int64(r.Len())), append(opts, pte.WithName(path))...)
		}
	case ModeWhole, ModeWindowed:
		var mf *mmapfile.File
		if mf, err = m.mopen(path, m.mode); err == nil {
			m.prog, err = pte.NewFile(mf, opts...)
		}
	default:
		err = fmt.Errorf("bench: unknown mode %q", m.mode)
	}
	return err
}

func openPTD(m *Model, path string, mode Mode) (*ptd.File, error) {
	switch mode {
	case ModeReadFile:
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return ptd.NewFile(mmapfile.NewBytes(b), ptd.WithName(path))
	case ModeXMmap:
		r, err := m.xopen(path)
		if err != nil {
			return nil, err
		}
		return ptd.NewFile(mmapfile.NewReaderAt(r, int64(r.Len())), ptd.WithName(path))
	case ModeWhole, ModeWindowed:
		mf, err := m.mopen(path, mode)
		if err != nil {
			return nil, err
		}
		return ptd.NewFile(mf)
	}
	return nil, fmt.Errorf("bench: unknown mode %q", mode)
}

func (m *Model) openRTen(path string) error {
	var err error
	switch m.mode {
	case ModeReadFile:
		var b []byte
		if b, err = os.ReadFile(path); err == nil {
			m.rt, err = rten.NewFile(mmapfile.NewBytes(b))
		}
	case ModeXMmap:
		var r *mmap.ReaderAt
		if r, err = m.xopen(path); err == nil {
			m.rt, err = rten.NewFile(mmapfile.NewReaderAt(r, int64(r.Len())))
		}
	case ModeWhole, ModeWindowed:
		var mf *mmapfile.File
		if mf, err = m.mopen(path, m.mode); err == nil {
			m.rt, err = rten.NewFile(mf)
		}
	default:
		err = fmt.Errorf("bench: unknown mode %q", m.mode)
	}
	return err
}

// Mode returns the loader the model was opened with.
func (m *Model) Mode() Mode { return m.mode }

// Paths returns the files the model's views point into: the model file and,
// when linked, its .ptd.
func (m *Model) Paths() []string {
	if m.data != "" {
		return []string{m.path, m.data}
	}
	return []string{m.path}
}

// NumTensors returns the number of tensors with data.
func (m *Model) NumTensors() int {
	if m.prog != nil {
		return len(m.prog.Tensors())
	}
	return len(m.tensors())
}

// tensors returns the model's tensors, format-neutral. For a program opened
// with OpenPkg it returns nil: Views and Names walk the program's own
// tensors, to avoid a copy.
func (m *Model) tensors() []format.Tensor {
	switch {
	case m.lm != nil:
		return m.lm.Tensors()
	case m.rt != nil:
		return m.rt.Tensors()
	case m.prog == nil && m.ptd != nil:
		return m.ptd.Tensors()
	}
	return nil
}

// Views appends a view of every tensor's bytes to dst[:0] and returns it:
// a slice of the mapping for edgeload (touching nothing, allocation-free in
// whole mode), a slice of the heap copy for readfile, and a fresh copy
// for xmmap.
func (m *Model) Views(dst [][]byte) ([][]byte, error) {
	dst = dst[:0]
	// The views alone, as ExecuTorch's data pointers: AppendTensorBytes
	// builds no tensor list (names, shapes), TensorAt would.
	switch {
	case m.prog != nil:
		return m.prog.AppendTensorBytes(dst)
	case m.lm != nil:
		return m.lm.AppendTensorBytes(dst)
	}
	ts := m.tensors()
	for i := range ts {
		b, err := view(&ts[i])
		if err != nil {
			return dst, err
		}
		dst = append(dst, b)
	}
	return dst, nil
}

func view(t *format.Tensor) ([]byte, error) {
	b, err := t.Data.Bytes()
	if err != nil {
		return nil, fmt.Errorf("bench: tensor %q: %w", t.Name, err)
	}
	if int64(len(b)) != t.NBytes {
		return nil, fmt.Errorf("bench: tensor %q: view of %d bytes, want %d", t.Name, len(b), t.NBytes)
	}
	return b, nil
}

// Tensor returns the bytes of the tensor with the given name (a
// fully-qualified name or made-up name for a program, a key for a .ptd, a
// node name for an .rten), by the model's own index.
func (m *Model) Tensor(name string) (segment.Segment, bool) {
	switch {
	case m.lm != nil:
		t, ok := m.lm.Tensor(name)
		if !ok {
			return segment.Segment{}, false
		}
		return t.Data, true
	case m.prog != nil:
		t, ok := m.prog.Tensor(name)
		if !ok {
			return segment.Segment{}, false
		}
		return t.Data, true
	case m.rt != nil:
		c, ok := m.rt.Constant(name)
		if !ok {
			return segment.Segment{}, false
		}
		return c.Data, true
	case m.ptd != nil:
		nd, ok := m.ptd.Entry(name)
		if !ok {
			return segment.Segment{}, false
		}
		return nd.Data, true
	}
	return segment.Segment{}, false
}

// Names returns the names Tensor finds, in Views order.
func (m *Model) Names() []string {
	var names []string
	if m.prog != nil {
		for _, t := range m.prog.Tensors() {
			names = append(names, t.Name)
		}
		return names
	}
	for _, t := range m.tensors() {
		names = append(names, t.Name)
	}
	return names
}

// Segments returns the segments of every file the model's views point into.
func (m *Model) Segments() []segment.Segment {
	var segs []segment.Segment
	if m.lm != nil {
		segs = append(segs, m.lm.Segments()...)
		for _, d := range m.lm.DataFiles() {
			segs = append(segs, d.Segments()...)
		}
	}
	if m.prog != nil {
		segs = append(segs, m.prog.Segments()...)
	}
	if m.rt != nil {
		segs = append(segs, m.rt.Segments()...)
	}
	if m.ptd != nil {
		segs = append(segs, m.ptd.Segments()...)
	}
	return segs
}

// Release drops the pages of every segment from the process (madvise
// DONTNEED, keeping the page cache). Views stay valid. For the readfile and
// xmmap loaders it does nothing: their bytes are heap copies that only the
// garbage collector can free once the model is closed and the views are
// dropped.
func (m *Model) Release() error {
	if !m.mode.Mapped() {
		return nil
	}
	for _, s := range m.Segments() {
		if err := s.Release(); err != nil {
			return err
		}
	}
	return nil
}

// ReleaseFiles drops from the process every page of every file the model's
// views point into (mmapfile.File.Release over the whole file), not segment
// by segment: pages that two neighbouring segments share, which a
// segment's Release keeps, go too. Views stay valid. Only for models opened
// with Open in the whole and windowed modes; a no-op otherwise.
func (m *Model) ReleaseFiles() error {
	if !m.mode.Mapped() || m.lm == nil {
		return nil
	}
	f := m.lm.File()
	if err := f.Release(0, f.Len(), false); err != nil {
		return err
	}
	for _, d := range m.lm.DataFiles() {
		f := d.MappedFile()
		if err := f.Release(0, f.Len(), false); err != nil {
			return err
		}
	}
	return nil
}

// Advise gives advice a about every segment (see segment.Segment.Advise);
// a no-op for the readfile and xmmap loaders.
func (m *Model) Advise(a mmapfile.Advice) error {
	if !m.mode.Mapped() {
		return nil
	}
	for _, s := range m.Segments() {
		if err := s.Advise(a); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the model and its linked data. Views must not be used
// afterwards.
func (m *Model) Close() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	if m.lm != nil {
		keep(m.lm.Close())
	}
	if m.prog != nil {
		keep(m.prog.Close())
	}
	if m.rt != nil {
		keep(m.rt.Close())
	}
	if m.ptd != nil {
		keep(m.ptd.Close())
	}
	for _, c := range m.closers {
		keep(c.Close())
	}
	return first
}
