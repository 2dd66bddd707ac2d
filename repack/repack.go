package repack

import (
	"errors"
	"fmt"
	"os"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
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
	// segment of a .pte or .ptd, and the tensor data section of an RTen V2
	// model, starts on, as an absolute file offset. 0 means DefaultAlign.
	Align int64
	// TensorAlign, when non-zero, also places every constant (and mutable
	// tensor's initial data) on a boundary of that many bytes inside its
	// segment, and every tensor of an RTen V2 data section. Segments then
	// start on max(Align, TensorAlign), so the tensors' absolute offsets are
	// aligned too. Tensors whose bytes overlap stay together, and a
	// segment that is also a delegate's blob or named data is copied as it
	// is.
	TensorAlign int64
	// Externalize, for a .pte, names a .ptd file to create: every constant
	// of the program moves there under the name Name gives it, each buffer
	// stored once, and becomes an EXTERNAL tensor of the program.
	Externalize string
	// To, when set, converts the model instead of rewriting it: its
	// tensors (names, dtypes, shapes, bytes) are written as a file of
	// that format, "safetensors" (Hugging Face's, the data buffer on Align)
	// or "ptd" (ExecuTorch's named data, a segment a tensor on Align).
	// What only the input's format holds (a program's methods, GGUF
	// metadata) is not carried over; safetensors metadata is, to
	// safetensors.
	To string
	// RTenV2 asks for an RTen V1 model to be written as V2: every inline
	// constant moves to the tensor data section (each on max(64,
	// TensorAlign)), the rest of the Model FlatBuffer is copied field by
	// field. It is ignored for a V2 input.
	RTenV2 bool
	// Data names .ptd files holding a program's external tensors; they are
	// linked so that the input verifies whole. They are not rewritten.
	Data []string
	// VerifyBytes also runs loader.Verify, which reads every byte of the
	// input, beside the rewrite. Without it the input is verified
	// structurally (the loader's Open and every check of Verify but the
	// read), and the copy fails on an input that is shorter than its
	// ranges, since it checks every count it copies.
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
	Size     int64 // size of the output
	Segments int   // segments of the output, as package loader lists them
	Tensors  int   // tensors of the output
	// DataSize is the size of the Externalize .ptd, 0 without one.
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

// Repack reads the model file in, verifies it, and writes it to out with the
// layout opts asks for. out (and opts.Externalize) is written to a temporary
// file in its directory and renamed at the end (synced first with
// opts.Sync); on error nothing is left behind. in is only read. An out that is the same file as in (also
// through a link) is refused with ErrSameFile.
func Repack(in, out string, opts Options) (*Result, error) {
	align, talign, err := opts.check()
	if err != nil {
		return nil, err
	}
	inFile := in
	if a, _, ok := mmapfile.SplitArchivePath(in); ok {
		inFile = a
	}
	for _, p := range []string{out, opts.Externalize} {
		if p == "" {
			continue
		}
		if err := notSame(inFile, p); err != nil {
			return nil, err
		}
		for _, d := range opts.Data {
			if a, _, ok := mmapfile.SplitArchivePath(d); ok {
				d = a
			}
			if err := notSame(d, p); err != nil {
				return nil, err
			}
		}
	}
	if opts.Externalize != "" && sameOrLinked(out, opts.Externalize) {
		return nil, fmt.Errorf("repack: %s: the .ptd and the program cannot be one file", opts.Externalize)
	}

	// The weights are copied from the loader's mapping of the input (its
	// descriptor, for copy_file_range), so that what is verified is what
	// is copied.
	m, err := openModel(in, opts.Data, true)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	write, ok := writers[m.Format()]
	if !ok {
		write = (*run).relayout // a format that lays itself out anew
	}
	if opts.To != "" {
		if write, ok = converters[opts.To]; !ok {
			return nil, fmt.Errorf("repack: cannot convert to %q (want safetensors or ptd)", opts.To)
		}
	}
	if opts.Externalize != "" && m.Format() != loader.PTE {
		return nil, fmt.Errorf("repack: --externalize needs a .pte input, %s is %s", in, m.Format())
	}
	if err := m.Check(); err != nil {
		return nil, err
	}
	// With VerifyBytes, Verify (which reads every byte) runs beside the
	// rewrite, and so does the summary of the input the output is compared
	// with: nothing is renamed into place unless both succeed.
	verified := make(chan error, 1)
	if !opts.VerifyBytes {
		verified <- nil
	} else {
		go func() {
			_, err := m.Verify()
			verified <- err
		}()
	}
	type summary struct {
		s   *Summary
		err error
	}
	summed := make(chan summary, 1)
	go func() {
		s, err := Summarize(m)
		summed <- summary{s, err}
	}()
	defer func() {
		if verified != nil {
			<-verified
		}
		if summed != nil {
			<-summed
		}
	}()

	r := &run{m: m, align: align, talign: talign, opts: &opts, kernelCopy: kernelCopy, inputs: []string{inFile}}
	for _, d := range opts.Data {
		if a, _, ok := mmapfile.SplitArchivePath(d); ok {
			d = a
		}
		r.inputs = append(r.inputs, d)
	}
	if mf, ok := m.Impl().(format.MultiFile); ok {
		for _, f := range mf.Files() {
			r.inputs = append(r.inputs, f.Name())
		}
	}
	r.align = max(align, talign)
	res := &Result{Format: m.Format()}
	if opts.To != "" {
		res.Format = loader.Format(opts.To)
	}
	outs := &outputs{perm: filePerm(inFile), sync: opts.Sync}
	defer outs.abort()
	err = write(r, outs, out, res)
	verr := <-verified
	verified = nil
	sum := <-summed
	summed = nil
	if err != nil {
		return nil, err
	}
	if verr != nil {
		return nil, verr
	}
	if sum.err != nil {
		return nil, sum.err
	}
	if err := readBack(outs, out, &opts, !r.unlinked, sum.s, res); err != nil {
		return nil, err
	}
	if err := outs.commit(); err != nil {
		return nil, err
	}
	return res, nil
}

// run holds one Repack's state.
type run struct {
	m      *loader.Model
	align  int64 // segment alignment: max(Align, TensorAlign)
	talign int64 // 0: tensors keep their place in their segment
	opts   *Options
	done   int64
	total  int64
	// kernelCopy: copy with copy_file_range while the system can.
	kernelCopy bool
	// inputs are the files read (the model's, its data files', its
	// shards'), which no output may replace.
	inputs []string
	// unlinked: the input has external tensors it was not given the data
	// of, so its output is checked unlinked too.
	unlinked bool
}

// writers rewrites each format, registered by the file that writes it.
var writers = map[loader.Format]func(r *run, outs *outputs, out string, res *Result) error{
	loader.PTE:  (*run).pte,
	loader.PTD:  (*run).ptd,
	loader.RTen: (*run).rten,
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

var alignUp = format.AlignUp

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
// summary in: a layout this package got wrong is an error, not a file.
// Converted files are compared by their tensors, rewritten ones by
// everything Diff compares. It sets res's counts from what the output
// holds.
func readBack(outs *outputs, out string, opts *Options, link bool, in *Summary, res *Result) error {
	var data []string
	for _, of := range outs.files {
		if afterWrite != nil {
			afterWrite(of.tmp)
		}
		if of.link || of.dst == opts.Externalize {
			data = append(data, of.tmp)
		}
	}
	for _, of := range outs.files {
		m, err := openModel(of.tmp, append(data, opts.Data...), link)
		if err != nil {
			return fmt.Errorf("%w: the output %s does not open: %v", errInternal, of.dst, err)
		}
		if of.dst == out {
			err = compareOutput(m, in, opts.To != "", res)
		}
		m.Close()
		if err != nil {
			return fmt.Errorf("%w: the output %s: %v", errInternal, of.dst, err)
		}
	}
	return nil
}

// compareOutput checks the output m against the input's summary in and
// records its segments and tensors in res.
func compareOutput(m *loader.Model, in *Summary, converted bool, res *Result) error {
	if err := m.Check(); err != nil {
		return err
	}
	s, err := Summarize(m)
	if err != nil {
		return err
	}
	var diffs []Difference
	if converted {
		diffs = Compare(in.Tensors, s.Tensors)
	} else {
		diffs = Diff(in, s)
	}
	switch len(diffs) {
	case 0:
	case 1:
		return fmt.Errorf("it differs from the input: %s", diffs[0])
	default:
		return fmt.Errorf("it differs from the input in %d places, first %s", len(diffs), diffs[0])
	}
	res.Segments, res.Tensors = len(m.Segments()), m.NumTensors()
	return nil
}
