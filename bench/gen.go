package bench

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/edgeload/edgeload/internal/schema/tflitefb"
	"github.com/edgeload/edgeload/internal/testkit/tflitegen"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
)

// Kind is the kind of file a Spec describes.
type Kind string

// The kinds of generated files.
const (
	// KindPTE is a .pte with one method "forward" whose tensors are float32
	// constants in one constant segment.
	KindPTE Kind = "pte"
	// KindPTD is a .ptd whose keys w0000, w0001, ... are float32 tensors,
	// one segment each.
	KindPTD Kind = "ptd"
	// KindPTEExternal is a .pte whose tensors are EXTERNAL, named like the
	// keys of the KindPTD file with the same shape, which holds their data.
	KindPTEExternal Kind = "pte-ext"
	// KindRTen is an .rten V2 whose constant nodes w0000, w0001, ... are
	// float32 tensors in the tensor data section.
	KindRTen Kind = "rten"
	// KindGGUF is a GGUF v3 file of float32 tensors named as llama.cpp
	// names a model's (token_embd.weight, blk.N.attn_q.weight, ...,
	// output.weight), in that order, 32-aligned.
	KindGGUF Kind = "gguf"
	// KindTFLite is a .tflite whose float32 constants w0000, w0001, ... keep
	// their bytes inline in the FlatBuffer (Buffer.data), each read by one
	// operator of the main subgraph. The FlatBuffer holds the data, so the
	// file is never sparse and stays under 2 GiB.
	KindTFLite Kind = "tflite"
	// KindTFLiteExternal is the same model in the large-model layout: every
	// buffer's bytes after the FlatBuffer at Buffer.offset/size, each
	// Align-aligned (64 when 0).
	KindTFLiteExternal Kind = "tflite-ext"
)

// Spec describes a generated model file: Tensors float32 tensors of shape
// Dims each.
type Spec struct {
	// Name names the file (without extension) and the benchmarks on it.
	Name    string
	Kind    Kind
	Tensors int
	Dims    []int32
	// Align is the alignment of segments and of tensors inside a segment
	// (pte), of segments (ptd), or of tensors (rten); 0 means 128 (64 for
	// rten, the converter's choice).
	Align int64
	// Real writes real bytes; otherwise the data is a sparse hole that costs
	// nothing on disk (fine where nothing reads the bytes).
	Real bool
}

// TensorBytes returns the size in bytes of one tensor.
func (s Spec) TensorBytes() int64 {
	n := int64(4)
	for _, d := range s.Dims {
		n *= int64(d)
	}
	return n
}

// DataBytes returns the size in bytes of all tensors.
func (s Spec) DataBytes() int64 { return s.TensorBytes() * int64(s.Tensors) }

// Ext returns the file name extension of the spec's kind.
func (s Spec) Ext() string {
	switch s.Kind {
	case KindPTD:
		return ".ptd"
	case KindRTen:
		return ".rten"
	case KindGGUF:
		return ".gguf"
	case KindTFLite, KindTFLiteExternal:
		return ".tflite"
	}
	return ".pte"
}

// FileName returns the file's base name: Name, "-sparse" for a file
// without real bytes, and the extension.
func (s Spec) FileName() string {
	if s.Real || s.Kind == KindPTEExternal || s.Kind == KindTFLite {
		return s.Name + s.Ext()
	}
	return s.Name + "-sparse" + s.Ext()
}

// Key returns the name of tensor i: w0000, w0001, ... (at least four
// digits).
func Key(i int) string { return fmt.Sprintf("w%04d", i) }

// Standard returns the specs of the standard files, the layouts of the
// reference measurements (FileName tells them apart): pte-64M (64 ×
// [512,512]), pte-1G (256 × [1024,1024]), pte-4G (1024 × [1024,1024]), each
// also 4096-aligned (the -a4096 names); flat-64M (1024 × [128,128], the
// 64 MiB file with the tensor count of pte-4G); ptd-1G (256 keys of
// [1024,1024]) with pte-ext (256 external tensors linked to it) and rten-1G
// (the same weights as an .rten V2); pte-10k and pte-100k (10,000 and 100,000
// tensors of [16,16]) for the index build; tflite-256M (1024 × [256,256]
// float32 inline in the FlatBuffer) and tflite-ext-1G (1024 × [512,512] in
// the large-model layout), the model-sized TFLite files.
//
// Real says whether the data is written (the 4 GiB files need 4 GiB of disk
// then); pte-ext has no data and is the same either way.
func Standard(real bool) []Spec {
	sq := func(n int32) []int32 { return []int32{n, n} }
	specs := []Spec{
		{Name: "pte-64M", Kind: KindPTE, Tensors: 64, Dims: sq(512)},
		{Name: "pte-1G", Kind: KindPTE, Tensors: 256, Dims: sq(1024)},
		{Name: "pte-4G", Kind: KindPTE, Tensors: 1024, Dims: sq(1024)},
		{Name: "pte-64M-a4096", Kind: KindPTE, Tensors: 64, Dims: sq(512), Align: 4096},
		{Name: "pte-1G-a4096", Kind: KindPTE, Tensors: 256, Dims: sq(1024), Align: 4096},
		{Name: "pte-4G-a4096", Kind: KindPTE, Tensors: 1024, Dims: sq(1024), Align: 4096},
		{Name: "flat-64M", Kind: KindPTE, Tensors: 1024, Dims: sq(128)},
		{Name: "ptd-1G", Kind: KindPTD, Tensors: 256, Dims: sq(1024)},
		{Name: "pte-ext", Kind: KindPTEExternal, Tensors: 256, Dims: sq(1024)},
		{Name: "rten-1G", Kind: KindRTen, Tensors: 256, Dims: sq(1024)},
		{Name: "pte-10k", Kind: KindPTE, Tensors: 10000, Dims: sq(16)},
		{Name: "pte-100k", Kind: KindPTE, Tensors: 100000, Dims: sq(16)},
		{Name: "gguf-4G", Kind: KindGGUF, Tensors: 1024, Dims: sq(1024)},
		{Name: "tflite-256M", Kind: KindTFLite, Tensors: 1024, Dims: sq(256)},
		{Name: "tflite-ext-1G", Kind: KindTFLiteExternal, Tensors: 1024, Dims: sq(512)},
	}
	for i := range specs {
		specs[i].Real = real
	}
	return specs
}

// Lookup returns the standard spec with the given name, with Real set as
// asked.
func Lookup(name string, real bool) (Spec, bool) {
	for _, s := range Standard(real) {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

var (
	patternOnce sync.Once
	pattern     []byte // 1 MiB of float32 values, the content of real files
)

// fill writes deterministic float32 content (values in [-1, 1), never a
// zero page) for the bytes [off, off+len(p)) of tensor t.
func fill(t int) func(p []byte, off int64) {
	patternOnce.Do(func() {
		pattern = make([]byte, 1<<20)
		x := uint32(2463534242)
		for i := 0; i < len(pattern); i += 4 {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			v := float32(int32(x)) / float32(math.MaxInt32)
			binary.LittleEndian.PutUint32(pattern[i:], math.Float32bits(v))
		}
	})
	shift := int64(t) * 4096
	return func(p []byte, off int64) {
		for len(p) > 0 {
			i := (shift + off) % int64(len(pattern)) &^ 3
			n := copy(p, pattern[i:])
			p, off = p[n:], off+int64(n)
		}
	}
}

// Write writes the file described by s to path.
func (s Spec) Write(path string) error {
	var fillFor func(i int) func([]byte, int64)
	if s.Real {
		fillFor = fill
	} else {
		fillFor = func(int) func([]byte, int64) { return nil }
	}
	align := s.Align
	switch s.Kind {
	case KindPTE, KindPTEExternal:
		if align == 0 {
			align = 128
		}
		m := writer.PTEMethod{Name: "forward", Tensors: make([]writer.PTETensor, s.Tensors)}
		for i := range m.Tensors {
			t := &m.Tensors[i]
			t.ScalarType, t.Sizes = writer.PTEFloat32, s.Dims
			if s.Kind == KindPTEExternal {
				t.Kind, t.Name = writer.PTEExternal, Key(i)
			} else {
				t.Kind, t.Fill = writer.PTEConstant, fillFor(i)
			}
		}
		p := writer.PTE{Methods: []writer.PTEMethod{m}, SegmentAlignment: align, TensorAlignment: align}
		_, err := p.WriteFile(path)
		return err
	case KindPTD:
		if align == 0 {
			align = 128
		}
		p := writer.PTD{Alignment: align, Entries: make([]writer.PTDEntry, s.Tensors)}
		for i := range p.Entries {
			p.Entries[i] = writer.PTDEntry{Key: Key(i), Fill: fillFor(i),
				Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: s.Dims}}
		}
		_, err := p.WriteFile(path)
		return err
	case KindRTen:
		r := writer.RTen{Align: align}
		shape := make([]uint32, len(s.Dims))
		for i, d := range s.Dims {
			shape[i] = uint32(d)
		}
		r.Graph.Nodes = make([]writer.RTenNode, s.Tensors)
		r.Graph.Outputs = make([]uint32, s.Tensors)
		for i := range r.Graph.Nodes {
			r.Graph.Nodes[i] = writer.RTenNode{Name: Key(i),
				Constant: &writer.RTenConstant{DType: format.Float32, Shape: shape, Fill: fillFor(i)}}
			r.Graph.Outputs[i] = uint32(i)
		}
		_, err := r.WriteFile(path)
		return err
	case KindGGUF:
		return s.writeGGUF(path, fillFor)
	case KindTFLite, KindTFLiteExternal:
		return s.writeTFLite(path, fillFor)
	}
	return fmt.Errorf("bench: unknown kind %q", s.Kind)
}

// GGUFName returns the name of tensor i of a KindGGUF file of n tensors:
// token_embd.weight, then seven per block (blk.N.attn_q.weight ...
// blk.N.ffn_down.weight), output.weight last.
func GGUFName(i, n int) string {
	per := []string{"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}
	switch {
	case i == 0:
		return "token_embd.weight"
	case i == n-1:
		return "output.weight"
	}
	return fmt.Sprintf("blk.%d.%s.weight", (i-1)/len(per), per[(i-1)%len(per)])
}

// writeGGUF writes a KindGGUF file: the header, the tensor infos, then the
// data, each tensor's bytes streamed from fill (a hole when fill is nil).
func (s Spec) writeGGUF(path string, fillFor func(i int) func([]byte, int64)) error {
	le := binary.LittleEndian
	h := le.AppendUint32([]byte("GGUF"), 3)
	h = le.AppendUint64(h, uint64(s.Tensors))
	h = le.AppendUint64(h, 1)
	str := func(b []byte, v string) []byte { return append(le.AppendUint64(b, uint64(len(v))), v...) }
	h = str(h, "general.architecture")
	h = le.AppendUint32(h, 8) // string
	h = str(h, "llama")
	nb := s.TensorBytes()
	for i := range s.Tensors {
		h = str(h, GGUFName(i, s.Tensors))
		h = le.AppendUint32(h, uint32(len(s.Dims)))
		for k := len(s.Dims) - 1; k >= 0; k-- { // ne: innermost first
			h = le.AppendUint64(h, uint64(s.Dims[k]))
		}
		h = le.AppendUint32(h, 0) // f32
		h = le.AppendUint64(h, uint64(int64(i)*nb))
	}
	data := (int64(len(h)) + 31) / 32 * 32
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(h); err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for i := range s.Tensors {
		fl := fillFor(i)
		if fl == nil {
			continue
		}
		for off := int64(0); off < nb; off += int64(len(buf)) {
			c := buf[:min(int64(len(buf)), nb-off)]
			fl(c, off)
			if _, err := f.WriteAt(c, data+int64(i)*nb+off); err != nil {
				return err
			}
		}
	}
	if err := f.Truncate(data + int64(s.Tensors)*nb); err != nil {
		return err
	}
	return f.Close()
}

// Files generates spec files on demand in one directory, each at most once;
// it is safe for concurrent use.
type Files struct {
	Dir string

	mu   sync.Mutex
	done map[string]*fileOnce
}

type fileOnce struct {
	once sync.Once
	path string
	err  error
}

// Path returns the path of the file for s in f.Dir, writing it first if it
// does not exist yet (a file already there from an earlier run is reused).
// For a KindPTEExternal spec it also writes the KindPTD file holding its
// data and returns that file's path as data.
func (f *Files) Path(s Spec) (path, data string, err error) {
	if s.Kind == KindPTEExternal {
		d := s
		d.Kind, d.Name = KindPTD, "ptd-1G"
		if s.Tensors != 256 || len(s.Dims) != 2 || s.Dims[0] != 1024 || s.Dims[1] != 1024 {
			d.Name = s.Name + "-data"
		}
		if data, _, err = f.Path(d); err != nil {
			return "", "", err
		}
	}
	f.mu.Lock()
	if f.done == nil {
		f.done = make(map[string]*fileOnce)
	}
	name := s.FileName()
	o := f.done[name]
	if o == nil {
		o = &fileOnce{path: filepath.Join(f.Dir, name)}
		f.done[name] = o
	}
	f.mu.Unlock()
	o.once.Do(func() {
		if st, err := os.Stat(o.path); err == nil && st.Size() > 0 {
			return
		}
		tmp := o.path + ".tmp"
		if o.err = s.Write(tmp); o.err == nil {
			o.err = os.Rename(tmp, o.path)
		} else {
			os.Remove(tmp)
		}
	})
	return o.path, data, o.err
}

// writeTFLite writes a KindTFLite or KindTFLiteExternal file with
// tflitegen: a main subgraph with an input x, the constants w0000, ...
// (buffers 1, 2, ...) and one operator per constant reading x and it. In
// the external layout the FlatBuffer names each buffer by offset and size
// and the data is streamed after it (a hole when fill is nil); inline, the
// FlatBuffer holds every byte (zeros when fill is nil).
func (s Spec) writeTFLite(path string, fillFor func(i int) func([]byte, int64)) error {
	nb := s.TensorBytes()
	m := &tflitegen.Model{Description: "edgeload bench " + s.Name, Buffers: make([]tflitegen.Buffer, s.Tensors+1)}
	sg := tflitegen.Subgraph{Name: "main", Tensors: make([]tflitegen.Tensor, 0, s.Tensors+1), Inputs: []int32{0}, Outputs: []int32{0}}
	sg.Tensors = append(sg.Tensors, tflitegen.Tensor{Name: "x", Type: tflitefb.TensorTypeFLOAT32, Shape: s.Dims[len(s.Dims)-1:]})
	for i := range s.Tensors {
		sg.Tensors = append(sg.Tensors, tflitegen.Tensor{Name: Key(i), Type: tflitefb.TensorTypeFLOAT32, Shape: s.Dims, Buffer: uint32(i + 1)})
		sg.Ops = append(sg.Ops, tflitegen.Op{Inputs: []int32{0, int32(i + 1)}, Outputs: []int32{0}})
	}
	m.Subgraphs = []tflitegen.Subgraph{sg}
	if s.Kind == KindTFLite {
		for i := range s.Tensors {
			b := make([]byte, nb)
			if fl := fillFor(i); fl != nil {
				fl(b, 0)
			}
			m.Buffers[i+1].Data = b
		}
		return os.WriteFile(path, m.Bytes(), 0o644)
	}
	align := s.Align
	if align == 0 {
		align = 64
	}
	// The FlatBuffer's length does not depend on the offsets' values (each
	// is a non-default ulong): lay it out with placeholders first.
	for i := range s.Tensors {
		m.Buffers[i+1] = tflitegen.Buffer{Offset: 1, Size: uint64(nb)}
	}
	data := (int64(len(m.Bytes())) + align - 1) / align * align
	stride := (nb + align - 1) / align * align
	for i := range s.Tensors {
		m.Buffers[i+1].Offset = uint64(data + int64(i)*stride)
	}
	fb := m.Bytes()
	if int64(len(fb)) > data {
		return fmt.Errorf("bench: %s: FlatBuffer grew from %d to %d bytes", path, data, len(fb))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(fb); err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for i := range s.Tensors {
		fl := fillFor(i)
		if fl == nil {
			continue
		}
		for off := int64(0); off < nb; off += int64(len(buf)) {
			c := buf[:min(int64(len(buf)), nb-off)]
			fl(c, off)
			if _, err := f.WriteAt(c, data+int64(i)*stride+off); err != nil {
				return err
			}
		}
	}
	if err := f.Truncate(data + int64(s.Tensors-1)*stride + nb); err != nil {
		return err
	}
	return f.Close()
}
