package stream

// need returns the bytes of the grains of sp that no held item covers, and
// how many of them a release in progress gives up (s.limbo): admitted again
// before the release, those stay resident and are not read again.
func (s *Stream) need(sp span) (n, kept int64) {
	for at := sp.start; at < sp.end; at += s.grain {
		k := grainKey{sp.f, at / s.grain}
		if s.count[k] == 0 {
			b := s.grainBytes(sp, at)
			n += b
			if s.limbo[k] {
				kept += b
			}
		}
	}
	return n, kept
}

// grainBytes returns the bytes of the file's pages in the grain of sp at
// off: a grain at the end of the file holds only its pages.
func (s *Stream) grainBytes(sp span, off int64) int64 {
	ps := int64(sp.f.PageSize())
	return max(0, min(s.grain, (sp.f.Len()+ps-1)&^(ps-1)-off))
}

// hold counts one more held item on each grain of sp and returns the bytes
// of the grains no item held before.
func (s *Stream) hold(sp span) int64 {
	var fresh []int64
	var n int64
	for at := sp.start; at < sp.end; at += s.grain {
		k := grainKey{sp.f, at / s.grain}
		if s.count[k]++; s.count[k] == 1 {
			fresh = append(fresh, at)
			n += s.grainBytes(sp, at)
		}
	}
	if len(fresh) > 0 {
		holdGrains(sp.f, s.grain, fresh)
	}
	return n
}

// unhold counts one held item fewer on each grain of sp and appends the
// grains no item holds any more to gone.
func (s *Stream) unhold(sp span, gone []span) []span {
	for at := sp.start; at < sp.end; at += s.grain {
		k := grainKey{sp.f, at / s.grain}
		if s.count[k]--; s.count[k] == 0 {
			delete(s.count, k)
			s.stats.Resident -= s.grainBytes(sp, at)
			gone = append(gone, span{f: sp.f, start: at, end: at + s.grain})
		}
	}
	return gone
}

// admit holds the next items while they fit in the limit (at least one
// item when nothing streamed is held), at most one pass ahead of the
// oldest held item.
func (s *Stream) admit() {
	for s.hi < s.total && s.hi-s.lo < s.n {
		v := s.hi
		w := s.at(v)
		var read, at int64
		switch {
		case w.retained:
			if v < s.n {
				read = w.keep
			}
		case s.direct != nil:
			var ok bool
			if at, ok = s.direct.ring.alloc(w.cover); !ok {
				return
			}
			read = w.cover
			s.stats.Resident = s.stats.Retained + s.direct.ring.touched
		default:
			n, kept := s.need(w.span)
			if s.hi > s.lo && s.stats.Resident+n > s.limit {
				return
			}
			s.stats.Resident += s.hold(w.span)
			read = n - kept
		}
		*s.slot(v) = slot{at: at}
		s.readBy[(v/s.n)%2] += read
		s.stats.Read += read
		s.noteResident()
		s.hi++
	}
}

// wantRelease reports whether the mapped items the caller has finished
// with should be released now: when the next item does not fit, when no
// item is left to admit, or when they amount to a quarter of the limit.
// Releasing in batches makes fewer, larger system calls.
func (s *Stream) wantRelease() bool {
	if s.direct != nil || s.lo >= min(s.cur, s.hi) {
		return false
	}
	if s.hi == s.total || s.hi-s.lo >= s.n || 4*s.finished >= s.limit {
		return true
	}
	w := s.at(s.hi)
	if w.retained {
		return false
	}
	n, _ := s.need(w.span)
	return s.stats.Resident+n > s.limit
}

// releaseItems gives up items [s.lo, to): their space in the direct
// reader's buffer, or their grains, appending those no held item covers any
// more to gone.
func (s *Stream) releaseItems(to int64, gone []span) []span {
	for ; s.lo < to; s.lo++ {
		switch w := s.at(s.lo); {
		case w.retained:
		case s.direct != nil:
			if s.slot(s.lo).at >= 0 {
				s.direct.ring.free()
			}
		default:
			gone = s.unhold(w.span, gone)
		}
	}
	s.finished = 0
	return gone
}

// unusedGrains returns the grains of gone that no held item covers (an
// item admitted since may hold some again), joined into spans.
func (s *Stream) unusedGrains(gone []span) []span {
	var free []span
	for _, sp := range gone {
		if s.count[grainKey{sp.f, sp.start / s.grain}] == 0 {
			free = append(free, sp)
		}
	}
	return coalesce(free)
}
