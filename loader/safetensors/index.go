package safetensors

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/arena"
	"github.com/edgeload/edgeload/loader/internal/nameindex"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// Shard is one file of a sharded checkpoint.
type Shard struct {
	// Name is the file name the index gives (beside the index).
	Name string
	// File is the parsed shard.
	File *File
}

// Sharded is a checkpoint split over several safetensors files and an
// index (model.safetensors.index.json) whose weight_map names the shard
// of every tensor. It lists the shards' tensors as one model: shard by
// shard in the order of their names, each shard's in file order (which
// is also the use order). Each shard has a mapping of its own, which
// Close closes; a tensor's Offset is in its shard, whose path its DataFile
// names.
type Sharded struct {
	index0  *mmapfile.File // the index file's mapping
	path    string
	shards  []Shard
	mfs     []*mmapfile.File
	tensors []format.Tensor
	index   nameindex.Index
	segs    []segment.Segment

	orderOnce sync.Once
	order     []int
}

// MappedFile returns the index file's mapping; the tensors' views point
// into the shards' (Files).
func (m *Sharded) MappedFile() *mmapfile.File { return m.index0 }

// Files returns the shards' mappings, in Shards order: the files the
// views point into.
func (m *Sharded) Files() []*mmapfile.File { return m.mfs }

// OpenIndex opens the sharded checkpoint whose index is at path, mapping
// the index and each shard with opts.
func OpenIndex(path string, opts ...mmapfile.Option) (*Sharded, error) {
	mf, err := mmapfile.Open(path, opts...)
	if err != nil {
		return nil, err
	}
	defer mf.Close()
	return openIndex(mf, path, opts)
}

// weightMap is a parsed index: each tensor name with the shard it is in.
type weightMap struct {
	names  []string
	shard  []int32 // index into files
	files  []string
	lookup nameindex.Index
}

// maxIndexSize bounds the index file, as huggingface_hub bounds it
// (MAX_INDEX_FILE_SIZE).
const maxIndexSize = 10 << 20

// openIndex reads the index in mf, at path, and opens its shards.
func openIndex(mf *mmapfile.File, path string, opts []mmapfile.Option) (*Sharded, error) {
	if mf.Len() > maxIndexSize {
		return nil, format.Errorf(formatName, "index", 0, "index of %d bytes is larger than the %d bytes accepted", mf.Len(), maxIndexSize)
	}
	b := make([]byte, mf.Len())
	if _, err := mf.ReadAt(b, 0); err != nil && err != io.EOF {
		return nil, fmt.Errorf("safetensors: reading the index: %w", err)
	}
	wm, err := parseIndex(b)
	if err != nil {
		return nil, err
	}
	if path == "" {
		return nil, format.Errorf(formatName, "index", 0, "a sharded checkpoint's index needs its path, to find the shards beside it")
	}
	dir := filepath.Dir(path)
	m := &Sharded{index0: mf, path: path}
	ok := false
	defer func() {
		if !ok {
			m.Close()
		}
	}()
	for _, name := range wm.files {
		p := filepath.Join(dir, name)
		smf, err := mmapfile.Open(p, opts...)
		if err != nil {
			return nil, fmt.Errorf("safetensors: index %s: shard %q: %w", path, name, err)
		}
		m.mfs = append(m.mfs, smf)
		f, err := NewFile(smf)
		if err != nil {
			return nil, fmt.Errorf("safetensors: shard %s: %w", p, err)
		}
		m.shards = append(m.shards, Shard{Name: name, File: f})
	}
	if err := m.resolve(wm, dir); err != nil {
		return nil, err
	}
	ok = true
	return m, nil
}

// resolve lists the shards' tensors and checks them against the index.
func (m *Sharded) resolve(wm *weightMap, dir string) error {
	n := 0
	for _, s := range m.shards {
		n += s.File.NumTensors()
	}
	m.tensors = make([]format.Tensor, 0, n)
	seen := make([]bool, len(wm.names))
	for si, s := range m.shards {
		p := filepath.Join(dir, s.Name)
		for _, t := range s.File.Tensors() {
			k, ok := wm.lookup.Lookup(t.Name)
			if !ok {
				return format.Errorf(formatName, "weight_map", -1,
					"shard %q has tensor %q, which the index does not name", s.Name, t.Name)
			}
			if int(wm.shard[k]) != si {
				return format.Errorf(formatName, "weight_map", -1,
					"the index puts tensor %q in shard %q, but shard %q has it", t.Name, wm.files[wm.shard[k]], s.Name)
			}
			seen[k] = true
			t.DataFile = p
			m.tensors = append(m.tensors, t)
		}
		m.segs = append(m.segs, s.File.Segments()...)
	}
	for k, ok := range seen {
		if !ok {
			return format.Errorf(formatName, "weight_map", -1,
				"the index puts tensor %q in shard %q, which does not have it", wm.names[k], wm.files[wm.shard[k]])
		}
	}
	m.index = nameindex.New(len(m.tensors), func(i int) string { return m.tensors[i].Name })
	return nil
}

// parseIndex reads an index: an object with a "weight_map" object of
// tensor name to shard file name; other members ("metadata") are skipped.
func parseIndex(b []byte) (*weightMap, error) {
	s := &scanner{b: b, field: "index"}
	wm := &weightMap{}
	var names arena.Strings
	more, err := s.open('{', '}', "index")
	if err != nil {
		return nil, err
	}
	var haveMap, haveMeta bool
	for more {
		s.ws()
		kpos := s.pos
		k, err := s.str("index: member name")
		if err != nil {
			return nil, err
		}
		isMap := string(k) == "weight_map"
		if isMap || string(k) == "metadata" {
			have := &haveMeta
			if isMap {
				have = &haveMap
			}
			if *have {
				return nil, s.errAt(kpos, "index: member %q appears twice", k)
			}
			*have = true
		}
		if err := s.expect(':', "index"); err != nil {
			return nil, err
		}
		if isMap {
			err = s.weightMap(wm, &names)
		} else {
			err = s.skip(1, "index")
		}
		if err != nil {
			return nil, err
		}
		if more, err = s.more('}', "index"); err != nil {
			return nil, err
		}
	}
	s.ws()
	if s.pos != len(s.b) {
		return nil, s.errorf("index: %s after the JSON object", s.what())
	}
	if !haveMap {
		return nil, format.Errorf(formatName, "index", 0, `index has no "weight_map"`)
	}
	wm.lookup = nameindex.Make(len(wm.names), func(i int) string { return wm.names[i] })
	for i := range wm.names {
		if _, rep := wm.lookup.Insert(i); rep {
			return nil, format.Errorf(formatName, "index.weight_map", -1, "tensor %q appears twice", wm.names[i])
		}
	}
	// shards in the order of their names
	order := slices.Sorted(slices.Values(wm.files))
	for i, si := range wm.shard {
		r, _ := slices.BinarySearch(order, wm.files[si])
		wm.shard[i] = int32(r)
	}
	wm.files = order
	return wm, nil
}

// weightMap reads the weight_map object into wm.
func (s *scanner) weightMap(wm *weightMap, names *arena.Strings) error {
	const ctx = "index.weight_map"
	more, err := s.open('{', '}', ctx)
	if err != nil {
		return err
	}
	files := map[string]int32{}
	for more {
		s.ws()
		k, err := s.str(ctx + ": tensor name")
		if err != nil {
			return err
		}
		name := names.Copy(k)
		if err := s.expect(':', ctx); err != nil {
			return err
		}
		s.ws()
		vpos := s.pos
		s.enter(ctx, name)
		v, err := s.str("")
		if err != nil {
			return err
		}
		si, ok := files[string(v)]
		if !ok {
			if !isLocalName(v) {
				return s.errAt(vpos, ": shard %q is not a file name beside the index", v)
			}
			si = int32(len(wm.files))
			f := names.Copy(v)
			files[f] = si
			wm.files = append(wm.files, f)
		}
		s.leave()
		wm.names = append(wm.names, name)
		wm.shard = append(wm.shard, si)
		if more, err = s.more('}', ctx); err != nil {
			return err
		}
	}
	return nil
}

// isLocalName reports whether v names a file in the index's folder: not
// empty, no path separator, not "." or "..".
func isLocalName(v []byte) bool {
	n := string(v)
	return n != "" && n != "." && n != ".." && !strings.ContainsAny(n, "/\\\x00") && filepath.IsLocal(n)
}

// Path returns the index's path.
func (m *Sharded) Path() string { return m.path }

// Shards returns the shards in the order of their names. The slice is
// shared: do not modify it.
func (m *Sharded) Shards() []Shard { return m.shards[:len(m.shards):len(m.shards)] }

// NumTensors returns the number of tensors of all shards.
func (m *Sharded) NumTensors() int { return len(m.tensors) }

// TensorAt returns tensor i.
func (m *Sharded) TensorAt(i int) *format.Tensor { return &m.tensors[i] }

// TensorData returns the bytes of tensor i, in its shard's mapping.
func (m *Sharded) TensorData(i int) segment.Segment { return m.tensors[i].Data }

// Lookup returns the index of the tensor named name. It allocates nothing.
func (m *Sharded) Lookup(name string) (int, bool) { return m.index.Lookup(name) }

// Segments returns each shard's data buffer, in shard order; each is a
// segment of its shard's mapping.
func (m *Sharded) Segments() []segment.Segment { return m.segs[:len(m.segs):len(m.segs)] }

// NamedData returns nil.
func (m *Sharded) NamedData() []format.NamedData { return nil }

// Groups returns nil: the model has one use order.
func (m *Sharded) Groups() []string { return nil }

// FileOrder reports true: the format records no order of use, so
// UseOrder is file order.
func (m *Sharded) FileOrder() bool { return true }

// UseOrder returns the tensors' indices shard by shard, each shard's in
// file order, for group "" (the only one).
func (m *Sharded) UseOrder(group string) ([]int, error) {
	if group != "" {
		return nil, noGroup(group)
	}
	m.orderOnce.Do(func() { m.order = identity(len(m.tensors)) })
	return m.order, nil
}

// Check does nothing: opening checked everything.
func (m *Sharded) Check() error { return nil }

// Close closes the shards' mappings.
func (m *Sharded) Close() error {
	var errs []error
	for _, mf := range m.mfs {
		errs = append(errs, mf.Close())
	}
	m.mfs = nil
	return errors.Join(errs...)
}

// ReportFields returns the JSON report's "shards": each shard's file name,
// header size, metadata and number of tensors.
func (m *Sharded) ReportFields() []format.Field {
	type shard struct {
		File       string            `json:"file"`
		HeaderSize int64             `json:"header_size"`
		Metadata   map[string]string `json:"metadata"`
		Tensors    int               `json:"tensors"`
	}
	out := make([]shard, len(m.shards))
	for i, s := range m.shards {
		out[i] = shard{File: s.Name, HeaderSize: s.File.HeaderSize(), Metadata: metaMap(s.File.meta), Tensors: s.File.NumTensors()}
	}
	return []format.Field{{Key: "shards", Value: out}}
}

// ReportText lists the shards.
func (m *Sharded) ReportText(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "sharded checkpoint: %d shards\n", len(m.shards))
	for _, s := range m.shards {
		f := s.File
		fmt.Fprintf(&b, "  %s: %d tensors, header %d bytes, data at %d, %s\n",
			s.Name, f.NumTensors(), f.hsize, f.DataOffset(), alignmentText(f.tensors))
	}
	_, err := w.Write(b.Bytes())
	return err
}

var (
	_ format.Model    = (*Sharded)(nil)
	_ format.Reporter = (*Sharded)(nil)
)
