package repack

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	_ "github.com/edgeload/edgeload/formats" // repack rewrites every built-in format
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// Alignment limits for Options.Align and Options.TensorAlign.
const (
	MinAlign = 16
	MaxAlign = 64 << 10
)

// DefaultAlign returns the alignment used when Options.Align is 0: the larger
// of 16 KiB and the OS page size.
func DefaultAlign() int64 {
	return max(16<<10, int64(os.Getpagesize()))
}

// Options says how to rewrite a file. The zero value realigns segments to
// DefaultAlign and changes nothing else.
type Options struct {
	// Align is the boundary (a power of two, MinAlign to MaxAlign) every
	// segment starts on, as an absolute file offset: a program's or .ptd's
	// segments, an RTen V2 model's tensor data section, every GGUF tensor,
	// every TFLite buffer, the safetensors data buffer, every LiteRT-LM
	// section. 0 means DefaultAlign.
	Align int64
	// TensorAlign, when non-zero, also places every tensor inside its
	// segment on a boundary of that many bytes, where several share a
	// segment (a program's constants and mutable tensors' initial data, a
	// legacy .ptd's tensors, an RTen V2 data section's tensors). Segments
	// then start on max(Align, TensorAlign), so the tensors' absolute
	// offsets are aligned too. Tensors whose bytes overlap stay together,
	// and a segment that is also a delegate's blob or named data is copied
	// as it is.
	TensorAlign int64
	// Externalize names a data file to create for a model whose format
	// links data files (a program and its .ptd): every constant moves
	// there, each buffer stored once, and becomes an external tensor of
	// the output.
	Externalize string
	// To, when set, converts the model instead of rewriting it: its
	// tensors (names, dtypes, shapes, bytes) are written as a file of the
	// format of that name, which must be one that converts (its
	// registration's Convert: "safetensors", "ptd"), its data on Align.
	// What only the input's format holds (a program's methods, GGUF
	// metadata) is not carried over; safetensors metadata is, to
	// safetensors.
	To string
	// Upgrade asks for the newest version of the model's format where it
	// has several: an RTen V1 model is written as V2, every inline constant
	// moved to the tensor data section. Other inputs ignore it.
	Upgrade bool
	// Data names files holding the input's external tensors (a program's
	// .ptd files), each a path or ARCHIVE!/ENTRY; they are linked so that
	// the input verifies whole. They are not rewritten.
	Data []string
	// VerifyBytes also runs loader.Verify, which reads every byte of the
	// input through the mapping, beside the rewrite. Without it the input
	// is verified structurally (the loader's Open and every check of
	// Verify but the read); its bytes are read once, for the summary the
	// output is compared with.
	VerifyBytes bool
	// Sync fsyncs the outputs before they are renamed into place (and
	// their directories after), so that a crash cannot leave OUT renamed
	// but incomplete. Off by default, as for cp and mv.
	Sync bool
	// Progress, when set, is called from time to time with the bytes of
	// weights copied so far and the total to copy.
	Progress func(done, total int64)
}

// Result says what Repack wrote.
type Result struct {
	Format   loader.Format
	Size     int64 // bytes written: the output and the files it names beside it (a sharded checkpoint's shards)
	Segments int   // segments of the output, as package loader lists them
	Tensors  int   // tensors of the output
	// DataSize is the size of the Externalize data file, 0 without one.
	DataSize int64
}

// kernelCopy says whether to try copy_file_range; tests turn it off to
// exercise the copy through the mapping.
var kernelCopy = true

// ErrSameFile is returned when the output is the input (or a link to it).
var ErrSameFile = errors.New("output is the input file")

func (o *Options) check() (align, talign int64, err error) {
	align = o.Align
	if align == 0 {
		align = DefaultAlign()
	}
	if err := checkAlign("align", align); err != nil {
		return 0, 0, err
	}
	if o.TensorAlign != 0 {
		if err := checkAlign("tensor-align", o.TensorAlign); err != nil {
			return 0, 0, err
		}
	}
	return align, o.TensorAlign, nil
}

func checkAlign(name string, a int64) error {
	if a < MinAlign || a > MaxAlign || a&(a-1) != 0 {
		return fmt.Errorf("repack: %s %d: want a power of two from %d to %d", name, a, MinAlign, MaxAlign)
	}
	return nil
}

// Repack reads the model file in (a path, or ARCHIVE!/ENTRY for a model
// stored in a zip archive), verifies it, and writes it to out with the
// layout opts asks for: the format lays itself out anew
// (format.Relayouter), or, with opts.To, the target format lays out the
// input's tensors (format.Registration.Convert). Every file written goes
// to a temporary file beside it (out and the files it names beside it to
// a temporary directory), is read back and compared with the input
// (Diff; only the tensors for a conversion), and is renamed into place
// only if all of that succeeded (synced first with opts.Sync); on error
// nothing is left behind. in is only read. An output that is an input
// file (also through a link) is refused with ErrSameFile.
func Repack(in, out string, opts Options) (*Result, error) {
	align, talign, err := opts.check()
	if err != nil {
		return nil, err
	}
	var inputs []string // the files read: the model's, its data files'
	for _, p := range append([]string{in}, opts.Data...) {
		if a, _, ok := mmapfile.SplitArchivePath(p); ok {
			p = a
		}
		inputs = append(inputs, p)
	}
	for _, p := range []string{out, opts.Externalize} {
		if p == "" {
			continue
		}
		for _, in := range inputs {
			if err := notSame(in, p); err != nil {
				return nil, err
			}
		}
	}
	if opts.Externalize != "" && sameOrLinked(out, opts.Externalize) {
		return nil, fmt.Errorf("repack: %s: the data file and the output cannot be one file", opts.Externalize)
	}

	// The weights are copied from the loader's mapping of the input (its
	// descriptor, for copy_file_range), so that what is verified is what
	// is copied.
	m, err := openModel(in, opts.Data, true)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	if mf, ok := m.Impl().(format.MultiFile); ok {
		for _, f := range mf.Files() {
			inputs = append(inputs, f.Name())
		}
	}
	if err := m.Check(); err != nil {
		return nil, err
	}
	// With VerifyBytes, Verify (which reads every byte) runs beside the
	// rewrite, and so does the summary of the input the output is compared
	// with: nothing is renamed into place unless both succeed.
	var wg sync.WaitGroup
	var verr, serr error
	var sum *Summary
	if opts.VerifyBytes {
		wg.Go(func() { _, verr = m.Verify() })
	}
	digest := keyedDigest()
	wg.Go(func() { sum, serr = summarize(m, digest) })
	defer wg.Wait()

	r := &run{opts: &opts, kernelCopy: kernelCopy, inputs: inputs}
	res := &Result{Format: m.Format()}
	outs := &outputs{perm: filePerm(inputs[0]), sync: opts.Sync}
	defer outs.abort()
	l, err := layout(m, max(align, talign), talign, &opts)
	if err == nil {
		if opts.To != "" {
			res.Format = loader.Format(opts.To)
		}
		err = r.writeLayout(outs, out, res, l)
	}
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if verr != nil {
		return nil, verr
	}
	if serr != nil {
		return nil, serr
	}
	if err := readBack(outs, out, &opts, resolved(m), sum, digest, res); err != nil {
		return nil, err
	}
	if err := outs.commit(); err != nil {
		return nil, err
	}
	return res, nil
}

// layout lays the output out: the input's format relays itself out, or
// the target format of a conversion lays out its tensors.
func layout(m *loader.Model, align, talign int64, opts *Options) (*format.Layout, error) {
	if opts.To != "" {
		convert, ok := converter(opts.To)
		if !ok {
			return nil, fmt.Errorf("repack: cannot convert to %q (want one of: %s)", opts.To, converters())
		}
		ts, err := convertible(m)
		if err != nil {
			return nil, err
		}
		l, err := convert(m.Impl(), ts, align)
		if err != nil {
			return nil, fmt.Errorf("repack: %w", err)
		}
		return l, nil
	}
	rl, ok := m.Impl().(format.Relayouter)
	if !ok {
		return nil, fmt.Errorf("repack: edgeload cannot rewrite %s files", m.Format())
	}
	o := format.RelayoutOptions{Align: align, TensorAlign: talign, Upgrade: opts.Upgrade}
	if opts.Externalize != "" {
		abs, err := filepath.Abs(opts.Externalize)
		if err != nil {
			return nil, fmt.Errorf("repack: %w", err)
		}
		o.DataFile = abs
	}
	l, err := rl.Relayout(o)
	if err != nil {
		return nil, err
	}
	if o.DataFile != "" && !slices.ContainsFunc(l.Files, func(f format.LayoutFile) bool { return f.Link }) {
		return nil, fmt.Errorf("repack: --externalize: %s files have no constants to move to a data file", m.Format())
	}
	return l, nil
}

// resolved reports whether every tensor of m has its bytes (an input
// whose external tensors were not given their data is read back
// unlinked).
func resolved(m *loader.Model) bool {
	for i := range m.NumTensors() {
		if !m.TensorAt(i).Resolved() {
			return false
		}
	}
	return true
}

// run holds one Repack's state.
type run struct {
	opts  *Options
	done  int64
	total int64
	// kernelCopy: copy with copy_file_range while the system can.
	kernelCopy bool
	// inputs are the files read (the model's, its data files', its
	// shards'), which no output may replace.
	inputs []string
}

func (r *run) progress(n int64) {
	r.done += n
	if r.opts.Progress != nil {
		r.opts.Progress(r.done, r.total)
	}
}

// notSame refuses to write path when it is the file at in.
func notSame(in, path string) error {
	if sameOrLinked(in, path) {
		return fmt.Errorf("repack: %s: %w %s", path, ErrSameFile, in)
	}
	return nil
}

func sameOrLinked(a, b string) bool {
	if a == b {
		return true
	}
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	if err != nil {
		return false
	}
	return os.SameFile(sa, sb)
}

// filePerm returns the permission bits of the file at in (0644 if it cannot
// be read); the output is created with them, less the umask, as cp does.
func filePerm(in string) os.FileMode {
	st, err := os.Stat(in)
	if err != nil {
		return 0o644
	}
	return st.Mode().Perm()
}

// afterWrite, when set (by tests), is called with the path of each file
// written before it is read back.
var afterWrite func(path string)

// readBack opens the written files with the loader (which verifies their
// headers, metadata and ranges) and compares the main one with the input's
// summary in: a layout this package or a format got wrong is an error, not
// a file. Converted files are compared by their tensors, rewritten ones by
// everything Diff compares. The main output is linked to the data files
// it names (and opts.Data) when link is set. It sets res's counts from
// what the output holds.
func readBack(outs *outputs, out string, opts *Options, link bool, in *Summary, digest func(segment.Segment) (string, error), res *Result) error {
	var data []string
	for _, of := range outs.files {
		if afterWrite != nil {
			afterWrite(of.tmp)
		}
		if of.link {
			data = append(data, of.tmp)
		}
	}
	for _, of := range outs.files {
		m, err := openModel(of.tmp, append(data, opts.Data...), link)
		if err != nil {
			return fmt.Errorf("%w: the output %s does not open: %v", errInternal, of.dst, err)
		}
		if of.dst == out {
			err = compareOutput(m, in, digest, opts.To != "", res)
		}
		m.Close()
		if err != nil {
			return fmt.Errorf("%w: the output %s: %v", errInternal, of.dst, err)
		}
	}
	return nil
}

// compareOutput checks the output m against the input's summary in, made
// with digest, and records its segments and tensors in res.
func compareOutput(m *loader.Model, in *Summary, digest func(segment.Segment) (string, error), converted bool, res *Result) error {
	if err := m.Check(); err != nil {
		return err
	}
	s, err := summarize(m, digest)
	if err != nil {
		return err
	}
	var diffs []Difference
	if converted {
		diffs = Compare(in.Tensors, s.Tensors)
	} else {
		diffs = Diff(in, s)
	}
	if len(diffs) == 0 {
		res.Segments, res.Tensors = len(m.Segments()), m.NumTensors()
		return nil
	}
	d := diffs[0]
	if d.What == "sha256" {
		d = Difference{Name: d.Name, What: "bytes differ"} // the digests are the read-back's own
	}
	if len(diffs) == 1 {
		return fmt.Errorf("it differs from the input: %s", d)
	}
	return fmt.Errorf("it differs from the input in %d places, first %s", len(diffs), d)
}
