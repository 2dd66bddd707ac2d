package stream

import (
	"errors"
	"fmt"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
	"github.com/edgeload/edgeload/signing"
)

// WithSignature makes the stream check what it reads against a model's
// signature (package signing): checks[f] is the signing.Check of file f,
// for every file the stream's items lie in (signing.Plan gives them, by
// the names the signature uses). A goroutine of the stream's own hashes
// every byte of each file in order: the items' bytes as the stream read
// them, and the bytes between them, which it reads itself.
//
// With the shards serialization an item is handed out only once every
// shard it touches has matched, so no byte of a shard that does not match
// reaches the caller; the room the retained weights leave must then hold a
// whole shard. With the files serialization a file's digest is known only
// after its last byte: items are handed out as they are read, and Next
// returns the error the moment the file is found not to match, after the
// caller has seen the file's items. Checking takes a single pass.
func WithSignature(checks map[*mmapfile.File]*signing.Check) Option {
	return func(c *config) { c.checks = checks }
}

// ErrSignature is wrapped, with the signing.Error saying which file and
// range, by the stream's error when the bytes it read do not match the
// signature.
var ErrSignature = errors.New("stream: the model does not match its signature")

// fileCheck is the checking state of one file.
type fileCheck struct {
	c      *signing.Check
	cursor int64 // the bytes [0, cursor) have been written to c
	last   int64 // the last item of the file in the order
	shards bool
}

// prepareChecks sets up checking for the items of s.order, with s.mu not
// yet in use.
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
		// A file none of the items lies in is read whole, first.
		s.checks[f] = &fileCheck{c: c, shards: c.Method == signing.SerializeShards, last: -1}
	}
	var shard int64
	for i := range s.order {
		f := s.order[i].Data.File()
		fc := s.checks[f]
		if fc == nil {
			return fmt.Errorf("stream: no signed check for %s, which holds %s", f.Name(), s.order[i].Name)
		}
		if fc.last < 0 && fc.shards {
			for _, r := range fc.c.Ranges {
				shard = max(shard, r.End-r.Start)
			}
		}
		fc.last = int64(i)
	}
	// Items wait in the room until their shard matches: it must hold a
	// shard and the item that ends it.
	var largest int64
	for i := range s.order {
		largest = max(largest, s.room(&s.order[i]))
	}
	if room := s.limit - s.stats.Retained; shard > 0 && shard+largest > room {
		return fmt.Errorf("%w: the signature's shards of %s need %s of room in memory (a shard and an item), but the budget of %s leaves %s: give a larger budget or sign with smaller shards",
			ErrBudget, format.SizeName(shard), format.SizeName(shard+largest), format.SizeName(s.stats.Budget), format.SizeName(room))
	}
	s.scratch = make([]byte, 1<<20)
	return nil
}

// hash is the checking goroutine: it writes the items read so far, and the
// bytes between them, to their files' checks, in order, and moves s.proven
// on past the items that may be handed out.
func (s *Stream) hash() {
	defer close(s.hashDone)
	for f, fc := range s.checks {
		if fc.last >= 0 {
			continue
		}
		err := s.feedGap(f, fc, f.Len())
		if err == nil {
			if err = fc.c.Close(); err != nil {
				err = fmt.Errorf("%w: %w", ErrSignature, err)
			}
		}
		if err != nil {
			s.mu.Lock()
			if s.verr == nil {
				s.verr = err
			}
			s.cond.Broadcast()
			s.mu.Unlock()
			return
		}
	}
	s.mu.Lock()
	s.wholeDone = true
	s.cond.Broadcast()
	s.mu.Unlock()
	for {
		s.mu.Lock()
		for !s.closed && s.ctx.Err() == nil && s.hashed == s.ready {
			s.cond.Wait()
		}
		if s.closed || s.ctx.Err() != nil || s.verr != nil {
			s.mu.Unlock()
			return
		}
		v := s.hashed
		w := s.at(v)
		data := w.Data
		if s.direct != nil && !w.retained {
			data = s.slot(v).data
		}
		failed := s.slot(v).err != nil
		s.mu.Unlock()

		var err error
		if !failed {
			err = s.feed(w, data, v)
		}
		s.mu.Lock()
		s.hashed++
		if err != nil && s.verr == nil {
			s.verr = err
		}
		// An item whose read failed goes out to carry its error; none goes
		// out from the one whose check failed on.
		for s.proven < s.hashed && s.verr == nil && (s.slot(s.proven).err != nil || s.provenItem(s.proven)) {
			s.proven++
		}
		for s.proven < s.hashed && s.verr != nil && s.proven < v && (s.slot(s.proven).err != nil || s.provenItem(s.proven)) {
			s.proven++
		}
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// provenItem reports whether item v may be handed out: its shards matched
// (with the files serialization, once it is hashed).
func (s *Stream) provenItem(v int64) bool {
	w := s.at(v)
	fc := s.checks[w.Data.File()]
	return !fc.shards || fc.c.Proven(w.Data.Offset(), w.Data.Len())
}

// feed writes item w's bytes (data, as the stream read them) to its file's
// check, reading the bytes between the last item and this one first; after
// the file's last item it writes the rest of the file and closes the check.
func (s *Stream) feed(w *work, data segment.Segment, v int64) error {
	f := w.Data.File()
	fc := s.checks[f]
	a, b := w.Data.Offset(), w.Data.Offset()+w.Data.Len()
	if err := s.feedGap(f, fc, a); err != nil {
		return err
	}
	if b > fc.cursor {
		p, err := data.Bytes()
		if err != nil {
			return err
		}
		var werr error
		if err := data.File().Guard(func() { _, werr = fc.c.Write(p[fc.cursor-a:]) }); err != nil {
			return err // the file shrank under the mapping
		}
		if werr != nil {
			return fmt.Errorf("%w: %w", ErrSignature, werr)
		}
		fc.cursor = b
	}
	if v != fc.last {
		return nil
	}
	if err := s.feedGap(f, fc, f.Len()); err != nil {
		return err
	}
	if err := fc.c.Close(); err != nil {
		return fmt.Errorf("%w: %w", ErrSignature, err)
	}
	return nil
}

// feedGap reads the file's bytes from the check's cursor up to end and
// writes them to the check.
func (s *Stream) feedGap(f *mmapfile.File, fc *fileCheck, end int64) error {
	for fc.cursor < end {
		n := min(int64(len(s.scratch)), end-fc.cursor)
		if _, err := f.ReadAt(s.scratch[:n], fc.cursor); err != nil {
			return err
		}
		if _, err := fc.c.Write(s.scratch[:n]); err != nil {
			return fmt.Errorf("%w: %w", ErrSignature, err)
		}
		fc.cursor += n
	}
	return nil
}
