package stream

import (
	"fmt"

	"github.com/edgeload/edgeload/loader"
)

// autoRoom returns the streaming room RetainAuto leaves: twice the largest
// streamed item, so that the next one is read while one is in use, and at
// least an eighth of the limit up to 64 MiB, to even out the reads.
func autoRoom(limit, largest int64) int64 {
	return max(2*largest, min(limit/8, 64<<20))
}

// room returns the bytes item w takes in the streaming room while held.
func (s *Stream) room(w *work) int64 {
	if s.direct != nil {
		return w.cover
	}
	return w.span.bytes()
}

// covers works out the direct reader's read size of every item.
func (s *Stream) covers(ws []work) {
	if s.direct == nil {
		return
	}
	for i := range ws {
		w := &ws[i]
		_, w.cover = s.direct.r[w.Data.File()].Cover(w.Data.Offset(), w.Data.Len())
	}
}

// chooseRetained marks the retained items of ws, holds their grains until
// Close, and records their bytes in Stats.Retained.
//
// Chosen by size, they are spread through the order: walking it, an item
// is retained when the retained bytes would stay within the share of the
// bytes walked so far that the whole retained set is of the order, so that
// the bytes read between two computations stay even.
func (s *Stream) chooseRetained(ws []work, c *config) error {
	switch {
	case c.keep != nil:
		want := make(map[int]bool, len(c.keep))
		for _, t := range c.keep {
			want[t] = true
		}
		for i := range ws {
			if ws[i].Tensor >= 0 && want[ws[i].Tensor] {
				ws[i].retained = true
				delete(want, ws[i].Tensor)
			}
		}
		for t := range want {
			return fmt.Errorf("stream: retained tensor %d is not in the stream's order: %w", t, loader.ErrNotFound)
		}
	case c.retain == 0:
	default:
		var total, largest int64
		grains := make(map[grainKey]bool)
		for i := range ws {
			largest = max(largest, s.room(&ws[i]))
			total += s.marginal(ws[i].span, grains, true)
		}
		budget := c.retain
		if budget == RetainAuto {
			if total <= s.limit {
				budget = total // everything fits
			} else {
				budget = s.limit - autoRoom(s.limit, largest)
			}
		}
		if budget <= 0 {
			break
		}
		clear(grains)
		walkedGrains := make(map[grainKey]bool)
		share := min(1, float64(budget)/float64(max(total, 1)))
		var kept, walked int64
		for i := range ws {
			w := &ws[i]
			walked += s.marginal(w.span, walkedGrains, true)
			c := s.marginal(w.span, grains, false)
			if kept+c <= budget && float64(kept+c) <= share*float64(walked) {
				s.marginal(w.span, grains, true)
				w.retained = true
				kept += c
			}
		}
	}
	for i := range ws {
		if w := &ws[i]; w.retained {
			w.keep = s.hold(w.span)
			s.stats.Retained += w.keep
		}
	}
	s.stats.Resident = s.stats.Retained
	s.noteResident()
	return nil
}

// marginal returns the bytes of the grains of sp not in set, adding them
// when add is set.
func (s *Stream) marginal(sp span, set map[grainKey]bool, add bool) int64 {
	var n int64
	for at := sp.start; at < sp.end; at += s.grain {
		k := grainKey{sp.f, at / s.grain}
		if !set[k] {
			n += s.grainBytes(sp, at)
			if add {
				set[k] = true
			}
		}
	}
	return n
}

// releaseRetained gives up the retained items' grains and appends those no
// held item covers any more to gone.
func (s *Stream) releaseRetained(gone []span) []span {
	for i := range s.order {
		if w := &s.order[i]; w.retained {
			gone = s.unhold(w.span, gone)
		}
	}
	return gone
}
