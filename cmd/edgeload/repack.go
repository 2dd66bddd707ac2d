package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/edgeload/edgeload/internal/sizeflag"
	"github.com/edgeload/edgeload/repack"
)

const repackAbout = `Rewrite model file IN as OUT with a new layout and the same meaning:
every segment starts on an --align boundary (absolute file offset): a
.pte's or .ptd's segments, an RTen V2 tensor data section, every GGUF
tensor, every TFLite buffer, the safetensors data buffer, every LiteRT-LM
section; a sharded checkpoint's index is written with its shards.
--tensor-align also places every constant inside its segment on a
boundary; --externalize moves every constant of a .pte to a new .ptd (open
the result with --data F.ptd); --rten-v2 writes an RTen V1 model as V2.
IN (a file or ARCHIVE!/ENTRY) is verified (headers, metadata, instructions
and every range; --verify-bytes also reads every byte, beside the copy)
and never written; OUT is written to a temporary file beside it, read back
and compared with IN, and renamed at the end (with --sync, synced to disk
first, so that a crash cannot leave an incomplete OUT).

With --to safetensors or --to ptd, convert instead: every tensor of IN
(name, dtype, shape, bytes) is written to OUT in that format, so that
ExecuTorch's weights open in Hugging Face's tools and theirs in a .ptd a
program links with --data. Only the tensors carry over.

With --check, compare IN and OUT instead: their tensors (name, dtype, shape
and SHA-256 of the bytes), delegate blobs, named data and segments without
tensors (size and SHA-256); print every difference, and exit 1 if any.

Sizes are bytes or take a suffix: 16K, 16KiB, 1MiB. See docs/REPACK.md.`

func runRepack(c *cli, args []string) int {
	fs := newFlags(lookup("repack"), repackAbout)
	var data stringList
	var opts repack.Options
	var check bool
	fs.Var((*sizeflag.Value)(&opts.Align), "align", fmt.Sprintf("segment `N`: a power of two, 16 to 64K (default %d)", repack.DefaultAlign()))
	fs.Var((*sizeflag.Value)(&opts.TensorAlign), "tensor-align", "also align every constant inside its segment to `N`")
	fs.StringVar(&opts.Externalize, "externalize", "", "move a .pte's constants to the new `F.ptd`")
	fs.StringVar(&opts.To, "to", "", "convert IN's tensors to a `FORMAT` file: safetensors or ptd")
	fs.BoolVar(&opts.Upgrade, "rten-v2", false, "write an RTen V1 model as V2 (inline constants move to the tensor data section)")
	fs.BoolVar(&opts.VerifyBytes, "verify-bytes", false, "also read every byte of IN to verify it (beside the copy)")
	fs.BoolVar(&opts.Sync, "sync", false, "fsync OUT before renaming it into place")
	fs.BoolVar(&check, "check", false, "compare the tensors and other data of IN and OUT instead of writing")
	fs.Var(&data, "data", "a `FILE.ptd` holding external tensors of IN (and OUT with --check; repeatable)")
	pos, code, ok := parse(c, fs, args)
	if !ok {
		return code
	}
	if len(pos) != 2 {
		return usageError(c, fs, "want IN and OUT")
	}
	var zero string
	fs.Visit(func(f *flag.Flag) {
		if (f.Name == "align" || f.Name == "tensor-align") && f.Value.String() == "0" {
			zero = f.Name
		}
	})
	if zero != "" {
		return usageError(c, fs, "--"+zero+" must be more than 0")
	}
	in, out := pos[0], pos[1]
	if check {
		diffs, err := repack.Check(in, out, data...)
		if err != nil {
			c.errorf("%v", err)
			return exitInvalid
		}
		for _, d := range diffs {
			fmt.Fprintln(c.stdout, d)
		}
		if len(diffs) > 0 {
			c.errorf("%s and %s differ in %d place(s)", in, out, len(diffs))
			return exitInvalid
		}
		fmt.Fprintf(c.stdout, "ok    %s and %s hold the same tensors and data\n", in, out)
		return exitOK
	}
	opts.Data = data
	if isTerminal(c.stderr) {
		opts.Progress = progressLine(c.stderr)
	}
	res, err := repack.Repack(in, out, opts)
	if err != nil {
		c.errorf("%v", err)
		return exitInvalid
	}
	fmt.Fprintf(c.stdout, "ok    %s: %s, %d bytes, %d segment(s), %d tensor(s)", out, res.Format, res.Size, res.Segments, res.Tensors)
	if opts.Externalize != "" {
		fmt.Fprintf(c.stdout, "; %s: %d bytes", opts.Externalize, res.DataSize)
	}
	fmt.Fprintln(c.stdout)
	return exitOK
}

// progressLine returns a Progress function that prints a line on w each
// time another 10% of the bytes is copied.
func progressLine(w io.Writer) func(done, total int64) {
	last := int64(0)
	return func(done, total int64) {
		if total <= 0 {
			return
		}
		pct := done * 100 / total / 10 * 10
		if pct > last {
			last = pct
			fmt.Fprintf(w, "edgeload: repack: %d%% (%d of %d bytes)\n", pct, done, total)
		}
	}
}
