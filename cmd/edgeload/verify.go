package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/segment"
	"github.com/edgeload/edgeload/signing"
)

const verifyAbout = `Verify each file fully: the headers and FlatBuffer metadata (as every open
does), every segment, tensor and named-data range against the file and each
other, and a read of every byte of every tensor and segment, fault-safe (a
file truncated while it is read gives an error, not a crash). Prints one line
per file; the exit status is 1 if any file fails. A bundled program (.bpte)
verifies the program it embeds and every test tensor. A FILE may be
ARCHIVE!/ENTRY, an entry stored uncompressed in a zip archive or APK.

With --signature, verify checks one MODEL (a file, a folder such as a .pte
beside its .ptd or a safetensors index beside its shards, or
ARCHIVE!/ENTRY) against its OpenSSF Model Signing (OMS v1.0) signature,
as model-signing writes it: the signature with --key (a bundle signed with
a key), --cert-chain (with a certificate chain; the leaf must be valid now)
or --trusted-root (with Sigstore, verified offline), then every file the
signature lists, or every shard of them, hashed in parallel. A file missing,
added or changed fails. It does not parse the model's format: run verify
without --signature for that. See docs/SIGNING.md.`

func runVerify(c *cli, args []string) int {
	fs := newFlags(lookup("verify"), verifyAbout)
	var data stringList
	fs.Var(&data, "data", "a `FILE.ptd` (or ARCHIVE!/ENTRY) holding external tensors of the .pte files (repeatable)")
	sf := addSignatureFlags(fs)
	pos, code, ok := parse(c, fs, args)
	if !ok {
		return code
	}
	if msg := sf.usage(); msg != "" {
		return usageError(c, fs, msg)
	}
	if sf.given() {
		if len(pos) != 1 || len(data) > 0 {
			return usageError(c, fs, "--signature takes one MODEL (a file, a folder or ARCHIVE!/ENTRY) and no --data")
		}
		return verifySigned(c, sf, pos[0])
	}
	if len(pos) == 0 {
		return usageError(c, fs, "want at least one FILE")
	}
	failed := 0
	for _, path := range pos {
		p := c.newProgress("verify " + filepath.Base(path))
		line, err := verifyFile(path, data, p)
		p.clear()
		if err != nil {
			failed++
			fmt.Fprintf(c.stdout, "FAIL  %s: %s\n", path, oneLine(err.Error()))
			continue
		}
		fmt.Fprintf(c.stdout, "ok    %s: %s\n", path, line)
	}
	if failed > 0 {
		if len(pos) == 1 {
			c.errorf("%s failed verification", pos[0])
		} else {
			c.errorf("%d of %d files failed verification", failed, len(pos))
		}
		return exitInvalid
	}
	return exitOK
}

// verifySigned checks a model against its signature and prints one line.
func verifySigned(c *cli, sf *signatureFlags, model string) int {
	p := c.newProgress("verify " + filepath.Base(model))
	b, res, err := sf.verifySignature(context.Background(), model, p.updater())
	p.clear()
	if err != nil {
		c.fileError(model, err)
		return exitInvalid
	}
	m := res.Manifest
	s := fmt.Sprintf("ok    %s: signed by %s; %s, %s hashed (%s serialization", model, signerOf(b, sf), plural(res.Files, "file"), sizeName(res.Bytes), m.Serialization.Method)
	if m.Serialization.Method == signing.SerializeShards {
		s += fmt.Sprintf(", %s of %d bytes", plural(res.Ranges, "shard"), m.Serialization.ShardSize)
	}
	s += ", " + m.Serialization.HashType + ")"
	if n := len(res.Unsigned); n > 0 {
		s += fmt.Sprintf("; %s left unread", plural(n, "unsigned file"))
	}
	fmt.Fprintln(c.stdout, s)
	return exitOK
}

// plural writes "1 file" or "2 files".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// terminal reports whether w is a terminal (tests replace it).
var terminal = isTerminal

// verifyFile opens and verifies one file and describes the result. With
// p, it shows the bytes read as it goes (loader.VerifyOptions.Progress).
func verifyFile(path string, data []string, p *progress) (string, error) {
	var opts []string
	if len(data) > 0 {
		// Data files apply to formats that link them: sniff first so that
		// a .ptd or .rten verified beside .pte files is not refused.
		if f, err := sniffPath(path); err == nil && f.LinksData() {
			opts = data
		}
	}
	m, err := openModel(path, opts)
	if err != nil {
		return "", err
	}
	defer m.Close()
	r, err := m.VerifyWith(loader.VerifyOptions{Progress: p.updater()})
	if err != nil {
		return "", err
	}
	s := fmt.Sprintf("%s, %d tensors, %d segments", m.Format(), r.Tensors, r.Segments)
	if r.Named > 0 {
		s += fmt.Sprintf(", %d named data", r.Named)
	}
	s += fmt.Sprintf(", %s read", sizeName(r.BytesRead))
	if r.Unresolved > 0 {
		s += fmt.Sprintf(" (%d external tensors unresolved: see --data)", r.Unresolved)
	}
	if r.TestTensors > 0 {
		s += fmt.Sprintf("; %d test tensors", r.TestTensors)
	}
	return s, nil
}

const residentAbout = `Map the file and show, per segment, how much of it is in the page cache
(mincore): what the model costs in RAM right now. Reading a model's weights
brings them in; the kernel may drop them again under memory pressure.`

func runResident(c *cli, args []string) int {
	fs := newFlags(lookup("resident"), residentAbout)
	width := fs.Int("width", 30, "width of each bar in characters")
	pos, code, ok := parse(c, fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(c, fs, fmt.Sprintf("want one FILE, got %d arguments", len(pos)))
	}
	if *width < 1 || *width > 200 {
		return usageError(c, fs, fmt.Sprintf("--width %d: want 1 to 200", *width))
	}
	path := pos[0]
	m, err := openModel(path, nil)
	if err != nil {
		c.fileError(path, err)
		return exitInvalid
	}
	defer m.Close()
	var b strings.Builder
	if err := printResident(&b, m, *width); err != nil {
		c.fileError(path, err)
		return exitInvalid
	}
	io.WriteString(c.stdout, b.String())
	return exitOK
}

// printResident writes one bar per segment, and one for the whole file.
func printResident(w io.Writer, m *loader.Model, width int) error {
	fmt.Fprintf(w, "%s: %s, %s, %s pages, %s mapping\n", m.Name(), m.Format(), sizeName(m.Size()), sizeName(int64(m.PageSize())), m.Mode())
	tw := newTable(w)
	whole, err := segment.New(m.File(), 0, m.Size())
	if err != nil {
		return err
	}
	if err := residentLine(tw, "file", whole, m.PageSize(), width); err != nil {
		return err
	}
	for i, s := range m.Segments() {
		if err := residentLine(tw, fmt.Sprintf("segment %d", i), s, m.PageSize(), width); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// residentLine writes "name  [#####.....]  42%  1.3 MiB / 3.1 MiB".
func residentLine(w io.Writer, name string, s segment.Segment, pageSize, width int) error {
	res, total, err := s.Resident()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	bytes := min(int64(res)*int64(pageSize), s.Len())
	fmt.Fprintf(w, "%s\t%s\t%s / %s\n", name, barFor(res, total, width), sizeName(bytes), sizeName(s.Len()))
	return nil
}

// barFor draws "[#####.....]   50%" for res of total pages: the bar is
// full, and the percentage 100, only when every page is resident, and the
// bar is not empty (nor the percentage 0) when any page is.
func barFor(res, total, width int) string {
	frac, pct := 0.0, 0
	if total > 0 {
		frac = float64(res) / float64(total)
		pct = res * 100 / total
	}
	filled := int(frac*float64(width) + 0.5)
	if res > 0 && filled == 0 {
		filled = 1
	}
	if res < total && filled == width {
		filled = width - 1
	}
	p := fmt.Sprintf("%3d%%", pct)
	if res > 0 && pct == 0 {
		p = " <1%"
	}
	return fmt.Sprintf("[%s%s]  %s", strings.Repeat("#", filled), strings.Repeat(".", width-filled), p)
}
