package signing

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
)

// Options tune Verify and Manifest.VerifyModel.
type Options struct {
	// IgnorePaths are more paths to leave out of a folder model, relative
	// to it and "/"-separated: the signature file, when it lies inside.
	IgnorePaths []string
	// IgnoreUnsigned accepts files the signature does not list, leaving
	// them unread (model_signing's --ignore_unsigned_files).
	IgnoreUnsigned bool
	// Workers is how many files or shards are hashed at once; 0 means
	// runtime.GOMAXPROCS(0).
	Workers int
	// Progress, when set, is called as bytes are hashed with the bytes
	// done and the total, from one goroutine at a time.
	Progress func(done, total int64)
}

// Result is what a verification read.
type Result struct {
	Manifest *Manifest
	Files    int      // files hashed
	Ranges   int      // digests compared: one per file, or one per shard
	Bytes    int64    // bytes hashed
	Unsigned []string // files left unread because of IgnoreUnsigned
}

// chunkSize is the size of each read, and of each worker's one buffer.
const chunkSize = 256 << 10

// Verify checks the bundle's signature against trust, then the model at
// modelPath (a file or a folder) against the statement it signs: every
// file listed present, none unlisted (unless opts.IgnoreUnsigned), and
// every file's or shard's bytes hashing to its digest. Files and shards
// are hashed in parallel (opts.Workers), each worker reading with ReadAt
// through one fixed buffer. The first failure in the model's order is returned, an *Error
// naming what failed. opts may be nil.
func Verify(ctx context.Context, b *Bundle, trust *Trust, modelPath string, opts *Options) (*Result, error) {
	if opts == nil {
		opts = &Options{}
	}
	m, err := b.Verify(trust)
	if err != nil {
		return nil, err
	}
	md, err := m.Model(modelPath, opts.IgnorePaths...)
	if err != nil {
		return nil, err
	}
	return m.VerifyModel(ctx, md, opts)
}

// unit is one digest to check: a file's range.
type unit struct {
	f     *File
	shown string
	r     Range
}

// VerifyModel checks md against the manifest (see Verify); opts may be nil.
func (m *Manifest) VerifyModel(ctx context.Context, md *Model, opts *Options) (*Result, error) {
	if opts == nil {
		opts = &Options{}
	}
	p, err := m.Plan(md, opts)
	if err != nil {
		return nil, err
	}
	res := &Result{Manifest: m, Files: len(p.Files), Unsigned: p.Unsigned}
	var units []unit
	for i, c := range p.Files {
		for _, r := range c.Ranges {
			units = append(units, unit{p.sources[i], c.shown, r})
		}
		res.Bytes += c.Size
	}
	res.Ranges = len(units)
	if err := m.hashAll(ctx, units, res.Bytes, opts); err != nil {
		return nil, err
	}
	return res, nil
}

// Plan is what checking a model against a verified manifest takes: the
// model's files the signature lists, in the model's order, each with its
// Check (its byte ranges and their digests). A reader that checks the
// model while it reads it feeds each file's bytes to its Check.
type Plan struct {
	Method   string   // SerializeFiles or SerializeShards
	HashType string   // the digest algorithm: "sha256"
	Files    []*Check // one per signed file of the model
	Unsigned []string // the model's files the signature does not list (with Options.IgnoreUnsigned)

	sources []*File // Files[i]'s bytes
}

// Plan matches the model's files to the manifest's: every file the
// manifest lists must be in md (ErrMissing), every file of md must be
// listed (ErrUnsigned) unless opts.IgnoreUnsigned, and a file with shards
// must be the size they cover (ErrDigest). It reads no file's bytes;
// opts may be nil.
func (m *Manifest) Plan(md *Model, opts *Options) (*Plan, error) {
	ignoreUnsigned := opts != nil && opts.IgnoreUnsigned
	matched := make(map[string]bool)
	type pair struct {
		f  *File
		fd *fileDigests
	}
	var pairs []pair
	var unsigned []string
	for i := range md.Files {
		f := &md.Files[i]
		fd := m.files[f.Name]
		if md.single && fd == nil {
			fd = m.files["."]
		}
		if fd == nil {
			if m.Serialization.Method == SerializeShards && f.Size == 0 {
				continue // an empty file has no shards to sign
			}
			unsigned = append(unsigned, f.Name)
			continue
		}
		matched[fd.path] = true
		pairs = append(pairs, pair{f, fd})
	}
	for _, p := range m.Paths() {
		if !matched[p] {
			msg := "missing: the signature lists it, the model does not hold it"
			if p == "." {
				msg = "missing: the signature is a single-file model's, and the model is a folder"
			}
			return nil, &Error{Op: "file", File: p, Msg: msg, Err: ErrMissing}
		}
	}
	if len(unsigned) > 0 && !ignoreUnsigned {
		msg := "not covered by the signature (the model holds it, the signature does not list it)"
		if len(unsigned) > 1 {
			msg = fmt.Sprintf("not covered by the signature, nor are %d more files (the model holds them, the signature does not list them)", len(unsigned)-1)
		}
		return nil, &Error{Op: "file", File: unsigned[0], Msg: msg, Err: ErrUnsigned}
	}
	p := &Plan{Method: m.Serialization.Method, HashType: m.Serialization.HashType, Unsigned: unsigned}
	for _, pr := range pairs {
		c, err := m.newCheck(pr.fd, displayName(md, pr.f), pr.f.Size)
		if err != nil {
			return nil, err
		}
		p.Files = append(p.Files, c)
		p.sources = append(p.sources, pr.f)
	}
	return p, nil
}

// hashAll hashes every unit on opts.Workers goroutines and returns the
// failure of the first unit, in order, that failed.
func (m *Manifest) hashAll(ctx context.Context, units []unit, total int64, opts *Options) error {
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(units)))
	var (
		next     atomic.Int64
		bad      atomic.Int64 // the first unit known to fail; units after it are dropped
		mu       sync.Mutex
		done     int64
		firstErr error
	)
	bad.Store(int64(len(units)))
	progress := func(n int) {
		if opts.Progress == nil {
			return
		}
		mu.Lock()
		done += int64(n)
		opts.Progress(done, total)
		mu.Unlock()
	}
	fail := func(i int, err error) {
		mu.Lock()
		if int64(i) < bad.Load() {
			bad.Store(int64(i))
			firstErr = err
		}
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := newWorker()
			defer w.close()
			for {
				i := next.Add(1) - 1
				stop := func() bool { return ctx.Err() != nil || i > bad.Load() }
				if i >= int64(len(units)) || stop() {
					return
				}
				if err := w.check(units[i], m.Serialization.Method, stop, progress); err != nil {
					if err != errStopped {
						fail(int(i), err)
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// errStopped stops a worker whose unit no longer matters: the context is
// done, or an earlier unit failed.
var errStopped = errors.New("stopped")

// worker hashes ranges through one fixed buffer, keeping the last file it
// read open.
type worker struct {
	buf  []byte
	h    hash.Hash
	sum  []byte
	name string
	f    *os.File
}

func newWorker() *worker {
	return &worker{buf: make([]byte, chunkSize), h: sha256.New(), sum: make([]byte, 0, sha256.Size)}
}

func (w *worker) close() {
	if w.f != nil {
		w.f.Close()
	}
}

// reader returns the bytes of f.
func (w *worker) reader(f *File) (io.ReaderAt, error) {
	if f.r != nil {
		return f.r, nil
	}
	if w.f != nil && w.name == f.path {
		return w.f, nil
	}
	w.close()
	w.f = nil
	of, err := os.Open(f.path)
	if err != nil {
		return nil, err
	}
	w.f, w.name = of, f.path
	return of, nil
}

// check hashes one unit and compares its digest; it returns errStopped
// as soon as stop says to.
func (w *worker) check(u unit, method string, stop func() bool, progress func(int)) error {
	r, err := w.reader(u.f)
	if err != nil {
		return &Error{Op: "file", File: u.shown, Msg: "missing: " + err.Error(), Err: ErrMissing}
	}
	w.h.Reset()
	if err := w.hashRange(r, u.r.Start, u.r.End, stop, progress); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return &Error{Op: "file", File: u.shown, Msg: "missing bytes: the file ended while it was read (it changed during verification)", Err: ErrMissing}
		}
		if err == errStopped {
			return err
		}
		return &Error{Op: "file", File: u.shown, Msg: "missing bytes: " + err.Error(), Err: ErrMissing}
	}
	w.sum = w.h.Sum(w.sum[:0])
	return compareDigest(u.shown, method, u.r, w.sum)
}

// hashRange feeds the bytes [start, end) of r to w.h, a buffer at a time.
func (w *worker) hashRange(r io.ReaderAt, start, end int64, stop func() bool, progress func(int)) error {
	for off := start; off < end; {
		buf := w.buf[:min(int64(len(w.buf)), end-off)]
		n, err := r.ReadAt(buf, off)
		if n < len(buf) {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if stop() {
			return errStopped
		}
		w.h.Write(buf)
		progress(n)
		off += int64(n)
	}
	return nil
}
