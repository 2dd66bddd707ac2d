package stream

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
	"github.com/edgeload/edgeload/signing"
)

// WithSignature makes the stream check what it reads against a model's
// signature (package signing): checks[f] is the signing.Check of file f,
// for every file the stream's items lie in and any other file of the model
// to be checked whole (SignatureChecks gives them). The stream's goroutines
// hash every byte of each file: the items' bytes as the stream read them,
// and the bytes between them. Checking takes a single pass.
//
// With shards, an item is handed out only once every shard it touches has
// matched, and the room the retained weights leave must hold a whole shard.
// With files, items are handed out as they are read, and Next returns the
// error once the file's digest does not match. A file another process
// changes while it is mapped can still change under a view the caller
// holds. docs/SIGNING.md has the details, and why GOMAXPROCS one above the
// cores speeds checking up.
func WithSignature(checks map[*mmapfile.File]*signing.Check) Option {
	return func(c *config) { c.checks = checks }
}

// SignatureChecks returns the checks WithSignature takes to stream m, a
// model opened from its file, checked against man, a verified signature
// (signing.Bundle.Verify). The signed model is m's file when man lists one
// file, else the folder that file is in (a .pte beside its .ptd, a
// safetensors index beside its shards), listed with opts (nil for none). It
// matches the model's files to man as signing.Verify does, and reads and
// checks whole the signed files m does not map (an index, a config).
func SignatureChecks(m *loader.Model, man *signing.Manifest, opts *signing.Options) (map[*mmapfile.File]*signing.Check, error) {
	var o signing.Options
	if opts != nil {
		o = *opts
	}
	root := m.File().Name()
	if len(man.Paths()) > 1 {
		root = filepath.Dir(root)
	}
	md, err := man.Model(root, o.IgnorePaths...)
	if err != nil {
		return nil, err
	}
	plan, err := man.Plan(md, &o)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]*signing.Check)
	for _, c := range plan.Files {
		byName[c.File] = c
	}
	files := []*mmapfile.File{m.File()}
	for _, d := range m.DataFiles() {
		files = append(files, d.MappedFile())
	}
	if mf, ok := m.Impl().(format.MultiFile); ok {
		files = append(files, mf.Files()...)
	}
	checks := make(map[*mmapfile.File]*signing.Check)
	for _, f := range files {
		var name string
		if root != m.File().Name() {
			rel, _ := filepath.Rel(root, f.Name()) // "" when it cannot be made relative
			name = filepath.ToSlash(rel)
		} else if f == m.File() && len(plan.Files) == 1 {
			name = plan.Files[0].File // the one file signed, under the name it was signed as
		}
		if c := byName[name]; c != nil {
			checks[f] = c
			delete(byName, name)
		}
	}
	for n, c := range byName {
		if err := checkWhole(filepath.Join(root, filepath.FromSlash(n)), c); err != nil {
			return nil, err
		}
	}
	return checks, nil
}

// checkWhole reads the file at p and checks every range of c.
func checkWhole(p string, c *signing.Check) error {
	fd, err := os.Open(p)
	if err != nil {
		return err
	}
	defer fd.Close()
	for i, r := range c.Ranges {
		if err := c.CheckRange(i, io.NewSectionReader(fd, r.Start, r.End-r.Start)); err != nil {
			return err
		}
	}
	return c.Close()
}

// ErrSignature is wrapped, with the signing.Error saying which file and
// range, by the stream's error when the bytes it read do not match the
// signature.
var ErrSignature = errors.New("stream: the model does not match its signature")

// fileCheck is the checking state of one file.
type fileCheck struct {
	f      *mmapfile.File
	c      *signing.Check
	cursor int64 // the bytes [0, cursor) have been hashed or handed to a shard
	last   int64 // the last item of the file in the order; -1 for none
	shards bool
	next   int      // shards: the range whose bytes are being gathered
	pieces [][]byte // shards: its bytes so far
}

// shardTask is one shard's bytes for a hashing worker.
type shardTask struct {
	fc     *fileCheck
	r      int
	pieces [][]byte
}

// prepareChecks sets up checking for the items of s.order.
func (s *Stream) prepareChecks(checks map[*mmapfile.File]*signing.Check, passes int) error {
	if checks == nil {
		return nil
	}
	if passes != 1 {
		return errors.New("stream: a signature is checked in a single pass: WithSignature takes no WithPasses")
	}
	s.checks = make(map[*mmapfile.File]*fileCheck)
	for f, c := range checks {
		if c == nil {
			return fmt.Errorf("stream: no signed check for %s", f.Name())
		}
		if c.Size != f.Len() {
			return fmt.Errorf("%w: %s is %d bytes, the signature's %s %d", ErrSignature, f.Name(), f.Len(), c.File, c.Size)
		}
		s.checks[f] = &fileCheck{f: f, c: c, shards: c.Method == signing.SerializeShards, last: -1}
	}
	// Items wait in the room until their shard matches: it must hold a
	// shard and the item that ends it.
	var shard, largest int64
	for i := range s.order {
		w := &s.order[i]
		fc := s.checks[w.Data.File()]
		if fc == nil {
			return fmt.Errorf("stream: no signed check for %s, which holds %s", w.Data.File().Name(), w.Name)
		}
		if fc.last < 0 && fc.shards {
			for _, r := range fc.c.Ranges {
				shard = max(shard, r.End-r.Start)
			}
		}
		fc.last = int64(i)
		largest = max(largest, s.room(w))
	}
	if room := s.limit - s.stats.Retained; shard > 0 && shard+largest > room {
		return fmt.Errorf("%w: the signature's shards of %s need %s of room in memory (a shard and an item), but the budget of %s leaves %s: give a larger budget or sign with smaller shards",
			ErrBudget, format.SizeName(shard), format.SizeName(shard+largest), format.SizeName(s.stats.Budget), format.SizeName(room))
	}
	s.scratch = make([]byte, 1<<20)
	return nil
}

// hash is the checking goroutine. It checks the files no item lies in,
// then hands every item read, and the bytes between items, to its file's
// check: with files, hashing them in order itself; with shards, gathering
// each shard's bytes for the workers that hash shards in parallel.
func (s *Stream) hash() {
	tasks := make(chan shardTask, runtime.GOMAXPROCS(0))
	var workers sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		workers.Add(1)
		go func() {
			defer workers.Done()
			s.hashShards(tasks)
		}()
	}
	defer func() {
		close(tasks)
		workers.Wait()
		close(s.hashDone)
	}()
	var err error
	for _, fc := range s.checks {
		if fc.last < 0 && err == nil {
			err = s.feedRest(fc, tasks)
		}
	}
	s.mu.Lock()
	s.verr = cmp.Or(s.verr, err)
	s.wholeDone = err == nil
	s.cond.Broadcast()
	s.mu.Unlock()
	if err != nil {
		return
	}
	for {
		s.mu.Lock()
		for !s.closed && s.ctx.Err() == nil && s.hashed == s.ready && !s.stalled() {
			s.cond.Wait()
		}
		if s.closed || s.ctx.Err() != nil || s.verr != nil {
			s.mu.Unlock()
			return
		}
		if s.hashed == s.ready {
			s.gathering = false
			s.mu.Unlock()
			err := s.finishShards(tasks)
			s.mu.Lock()
			s.verr = cmp.Or(s.verr, err)
			s.cond.Broadcast()
			s.mu.Unlock()
			continue
		}
		v := s.hashed
		w, data := s.at(v), s.data(v)
		failed := s.slot(v).err != nil
		s.mu.Unlock()

		var err error
		if !failed {
			err = s.feed(w, data, v, tasks)
		}
		gathering := false
		for _, fc := range s.checks {
			gathering = gathering || len(fc.pieces) > 0
		}
		s.mu.Lock()
		s.hashed++
		s.gathering = gathering
		s.verr = cmp.Or(s.verr, err)
		if err == nil {
			// With shards, a worker may have checked the item's last
			// shard before it counted as hashed.
			s.advanceProven()
		}
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// stalled reports, with s.mu held, whether the stream would wait forever
// on its checks: Next waits for an item not yet proven, no shard is being
// hashed, and the room is full of items held unproven, so that the items
// after them, whose bytes end the shards being gathered, cannot be read.
func (s *Stream) stalled() bool {
	return s.gathering && s.nextWait && s.readIdle && s.pending == 0 && s.proven <= s.cur
}

// wakeChecks wakes the checking goroutine, with s.mu held, when the stream
// has stalled.
func (s *Stream) wakeChecks() {
	if s.checks != nil && s.stalled() {
		s.cond.Broadcast()
	}
}

// finishShards reads through the files the rest of each shard being
// gathered and hands it to the workers, when the stream has stalled.
func (s *Stream) finishShards(tasks chan<- shardTask) error {
	for _, fc := range s.checks {
		if len(fc.pieces) > 0 {
			if err := s.feedTo(fc, fc.c.Ranges[fc.next].End, tasks); err != nil {
				return err
			}
		}
	}
	return nil
}

// signatureError wraps a check's error in ErrSignature; nil stays nil.
func signatureError(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrSignature, err)
}

// advanceProven moves s.proven past the items that may be handed out, with
// s.mu held: hashed, and with shards every shard they touch matched (an
// item whose read failed goes out to carry its error).
func (s *Stream) advanceProven() {
	for s.proven < s.hashed {
		v := s.proven
		w := s.at(v)
		fc := s.checks[w.Data.File()]
		if s.slot(v).err == nil && fc.shards && !fc.c.Proven(w.Data.Offset(), w.Data.Len()) {
			return
		}
		s.proven++
	}
}

// hashShards is a worker: it hashes each shard it is given and checks the
// sum.
func (s *Stream) hashShards(tasks <-chan shardTask) {
	for t := range tasks {
		var sum []byte
		err := t.fc.f.Guard(func() { sum = signing.Sum(t.pieces...) })
		s.mu.Lock()
		if err == nil {
			err = signatureError(t.fc.c.CheckSum(t.r, sum))
		}
		s.verr = cmp.Or(s.verr, err)
		s.pending--
		s.advanceProven()
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// feed hands item v's bytes (data, as the stream read them) to its file's
// check, the bytes between the last item and this one first; after the
// file's last item, the rest of the file, and it closes the check.
func (s *Stream) feed(w *work, data segment.Segment, v int64, tasks chan<- shardTask) error {
	fc := s.checks[w.Data.File()]
	a, b := w.Data.Offset(), w.Data.Offset()+w.Data.Len()
	if err := s.feedAhead(fc, v, a, tasks); err != nil {
		return err
	}
	if b > fc.cursor {
		p, err := data.Bytes()
		if err != nil {
			return err
		}
		if err := s.add(fc, p[fc.cursor-a:], data.File(), tasks); err != nil {
			return err
		}
	}
	if v != fc.last {
		return nil
	}
	return s.feedRest(fc, tasks)
}

// aheadItems is how many items past the one being hashed feedAhead looks
// through for the bytes before it.
const aheadItems = 64

// feedAhead hands the check the file's bytes from the cursor up to end,
// the start of item v. Where items after v that the stream has admitted
// hold them, it waits for their reads and hashes their views (an order
// that differs from the file's costs no copy and no second read); the
// rest it reads from the file.
func (s *Stream) feedAhead(fc *fileCheck, v, end int64, tasks chan<- shardTask) error {
	if fc.cursor >= end {
		return nil
	}
	type view struct {
		off  int64
		data segment.Segment
	}
	var us []int64 // the items after v that hold some of the bytes
	s.mu.Lock()
	for u := v + 1; u < s.hi && u <= v+aheadItems; u++ {
		if d := s.at(u).Data; d.File() == fc.f && d.Offset() < end && d.Offset()+d.Len() > fc.cursor {
			us = append(us, u)
		}
	}
	last := v // read already
	if len(us) > 0 {
		last = us[len(us)-1]
	}
	for s.ready <= last && !s.closed && s.ctx.Err() == nil {
		s.cond.Wait()
	}
	if s.ready <= last {
		s.mu.Unlock()
		return cmp.Or(s.ctx.Err(), errClosed)
	}
	var ahead []view
	for _, u := range us {
		if s.slot(u).err == nil {
			ahead = append(ahead, view{s.at(u).Data.Offset(), s.data(u)})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(ahead, func(x, y view) int { return cmp.Compare(x.off, y.off) })
	for _, x := range ahead {
		if err := s.feedTo(fc, x.off, tasks); err != nil {
			return err
		}
		p, err := x.data.Bytes()
		if err != nil {
			return err
		}
		if hi := min(end, x.off+int64(len(p))); fc.cursor < hi {
			if err := s.add(fc, p[fc.cursor-x.off:hi-x.off], x.data.File(), tasks); err != nil {
				return err
			}
		}
	}
	return s.feedTo(fc, end, tasks)
}

// feedRest hands the rest of the file to its check and closes the check
// (with shards, Next closes it once the workers have checked them all).
func (s *Stream) feedRest(fc *fileCheck, tasks chan<- shardTask) error {
	if err := s.feedTo(fc, fc.f.Len(), tasks); err != nil || fc.shards {
		return err
	}
	return signatureError(fc.c.Close())
}

// feedTo reads the file's bytes from the cursor up to end and hands them
// to the check.
func (s *Stream) feedTo(fc *fileCheck, end int64, tasks chan<- shardTask) error {
	for fc.cursor < end {
		n := min(int64(len(s.scratch)), end-fc.cursor)
		buf := s.scratch[:n]
		if fc.shards {
			buf = make([]byte, n) // a shard's bytes wait for a worker
		}
		if _, err := fc.f.ReadAt(buf, fc.cursor); err != nil {
			return err
		}
		s.gapRead += n
		if err := s.add(fc, buf, nil, tasks); err != nil {
			return err
		}
	}
	return nil
}

// add hands p, the file's bytes at the cursor, to the check: with files it
// hashes them (from the mapping of view, guarded against a file truncated
// under it; a nil view guards as mmapfile.Guard), with shards it gathers
// them and sends each shard to the workers once its last byte is in.
func (s *Stream) add(fc *fileCheck, p []byte, view *mmapfile.File, tasks chan<- shardTask) error {
	if !fc.shards {
		var werr error
		if err := view.Guard(func() { _, werr = fc.c.Write(p) }); err != nil {
			return err // the file shrank under the mapping
		}
		if werr != nil {
			return signatureError(werr)
		}
		fc.cursor += int64(len(p))
		return nil
	}
	for len(p) > 0 {
		r := fc.c.Ranges[fc.next]
		k := min(int64(len(p)), r.End-fc.cursor)
		fc.pieces = append(fc.pieces, p[:k])
		fc.cursor += k
		p = p[k:]
		if fc.cursor == r.End {
			s.mu.Lock()
			s.pending++
			s.mu.Unlock()
			tasks <- shardTask{fc: fc, r: fc.next, pieces: fc.pieces}
			fc.pieces, fc.next = nil, fc.next+1
		}
	}
	return nil
}

// finishChecks closes the shards checks once every shard is checked, with
// s.mu held, and returns the first failure.
func (s *Stream) finishChecks() error {
	for _, fc := range s.checks {
		if fc.shards && s.verr == nil {
			s.verr = signatureError(fc.c.Close())
		}
	}
	return s.verr
}
