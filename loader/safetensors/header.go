package safetensors

import (
	"cmp"
	"math"
	"math/bits"
	"slices"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/arena"
)

// entry is a header entry as read, before the entries are put in data
// order and checked against each other.
type entry struct {
	name       string
	dt         format.DType
	shape      []int64
	begin, end uint64
	nbytes     uint64 // numel × bits / 8
	pos        int64  // file offset of the entry's name, for errors
}

// header is what parseHeader reads from the JSON.
type header struct {
	entries []entry // in header order
	meta    []Meta  // __metadata__, in header order; nil when absent or null
	hasMeta bool
}

// parseHeader reads the JSON header b, found at file offset base, and
// checks every rule that concerns one entry alone (dtype, shape, offsets,
// byte count). The entries' order and the keys' uniqueness are checked by
// the caller.
func parseHeader(b []byte, base int64) (*header, error) {
	s := &scanner{b: b, base: base, field: "header"}
	// The smallest entry, "":{"dtype":"F4","shape":[],"data_offsets":[0,0]},
	// takes 50 bytes: room for as many entries as the header can hold.
	h := &header{entries: make([]entry, 0, len(b)/50+1)}
	var names arena.Strings
	var dims arena.Slices[int64]
	more, err := s.open('{', '}', "header")
	if err != nil {
		return nil, err
	}
	for more {
		s.ws()
		pos := s.base + int64(s.pos)
		key, err := s.str("header: tensor name")
		if err != nil {
			return nil, err
		}
		if string(key) == metadataKey {
			if h.hasMeta {
				return nil, format.Errorf(formatName, "header", pos, "key %q appears twice", metadataKey)
			}
			h.hasMeta = true
			if err := s.expect(':', "header"); err != nil {
				return nil, err
			}
			if h.meta, err = s.metadata(&names); err != nil {
				return nil, err
			}
		} else {
			e := entry{name: names.Copy(key), pos: pos}
			if err := s.expect(':', "header"); err != nil {
				return nil, err
			}
			if err := s.entry(&e, &dims); err != nil {
				return nil, err
			}
			h.entries = append(h.entries, e)
		}
		if more, err = s.more('}', "header"); err != nil {
			return nil, err
		}
	}
	s.ws()
	if s.pos != len(s.b) {
		return nil, s.errorf("header: %s after the JSON object (only whitespace may pad it)", s.what())
	}
	return h, nil
}

// metadata reads the __metadata__ value: null or an object of strings.
func (s *scanner) metadata(names *arena.Strings) ([]Meta, error) {
	const ctx = "header: __metadata__"
	s.ws()
	if s.literal("null") {
		return nil, nil
	}
	more, err := s.open('{', '}', ctx)
	if err != nil {
		return nil, err
	}
	meta := []Meta{}
	for more {
		s.ws()
		k, err := s.str(ctx + " key")
		if err != nil {
			return nil, err
		}
		key := names.Copy(k)
		if err := s.expect(':', ctx); err != nil {
			return nil, err
		}
		s.enter(ctx, key)
		v, err := s.str(": value")
		s.leave()
		if err != nil {
			return nil, err
		}
		if len(meta) == cap(meta) {
			// doubling, so that the copies add up to the final length
			meta = append(make([]Meta, 0, 2*cap(meta)+4), meta...)
		}
		meta = append(meta, Meta{Key: key, Value: names.Copy(v)})
		if more, err = s.more('}', ctx); err != nil {
			return nil, err
		}
	}
	return meta, nil
}

// members are the members of a tensor entry.
var members = [...]string{"dtype", "shape", "data_offsets"}

// entry reads a tensor entry's object into e and checks it alone.
func (s *scanner) entry(e *entry, dims *arena.Slices[int64]) error {
	const ctx = ""
	s.enter("header", e.name)
	defer s.leave()
	more, err := s.open('{', '}', ctx)
	if err != nil {
		return err
	}
	var have [len(members)]bool
	var bitw uint64
	var dtPos, shapePos, offPos int
	for more {
		s.ws()
		kpos := s.pos
		k, err := s.str(ctx + ": member name")
		if err != nil {
			return err
		}
		f := slices.Index(members[:], string(k))
		if f >= 0 {
			if have[f] {
				return s.errAt(kpos, "%s: member %q appears twice", ctx, k)
			}
			have[f] = true
		}
		if err := s.expect(':', ctx); err != nil {
			return err
		}
		s.ws()
		switch f {
		case 0:
			dtPos = s.pos
			code, err := s.str(ctx + ".dtype")
			if err != nil {
				return err
			}
			var ok bool
			if e.dt, bitw, ok = lookupCode(code); !ok {
				if looksLikeCode(code) {
					return s.wrapAt(format.ErrUnsupportedVersion, dtPos,
						"%s.dtype: %q is not a dtype code this reader knows (a newer one?)", ctx, code)
				}
				return s.errAt(dtPos, "%s.dtype: %q is not a safetensors dtype code (BOOL, U8, F16, BF16, F32, ...)", ctx, code)
			}
		case 1:
			shapePos = s.pos
			if err := s.expect('[', ctx+".shape"); err != nil {
				return err
			}
			// sized before it is read: the slice takes 8 bytes for
			// each dimension's 2 bytes or more of JSON
			e.shape = dims.Make(s.countElems())
			for i := range e.shape {
				if i > 0 {
					if err := s.expect(',', ctx+".shape"); err != nil {
						return err
					}
				}
				d, err := s.u64(ctx + ".shape")
				if err != nil {
					return err
				}
				if d > math.MaxInt64 {
					return s.errAt(shapePos, "%s.shape: dimension %d is %d, more than this reader represents (2^63-1)", ctx, i, d)
				}
				e.shape[i] = int64(d)
			}
			if err := s.expect(']', ctx+".shape"); err != nil {
				return err
			}
		case 2:
			offPos = s.pos
			if err := s.expect('[', ctx+".data_offsets"); err != nil {
				return err
			}
			if e.begin, err = s.u64(ctx + ".data_offsets[0]"); err != nil {
				return err
			}
			if err := s.expect(',', ctx+".data_offsets: want exactly two offsets"); err != nil {
				return err
			}
			if e.end, err = s.u64(ctx + ".data_offsets[1]"); err != nil {
				return err
			}
			if err := s.expect(']', ctx+".data_offsets: want exactly two offsets"); err != nil {
				return err
			}
		default:
			// serde ignores the members it does not know
			if err := s.skip(2, ctx); err != nil {
				return err
			}
		}
		if more, err = s.more('}', ctx); err != nil {
			return err
		}
	}
	for i, name := range members {
		if !have[i] {
			return s.errAt(int(e.pos-s.base), "%s: member %q missing", ctx, name)
		}
	}
	// numel, then numel × bits, checked in 64 bits left to right (R11)
	numel := uint64(1)
	for i, d := range e.shape {
		hi, lo := bits.Mul64(numel, uint64(d))
		if hi != 0 {
			return s.errAt(shapePos, "%s.shape %v: the element count overflows 64 bits at dimension %d", ctx, e.shape, i)
		}
		numel = lo
	}
	hi, nbits := bits.Mul64(numel, bitw)
	if hi != 0 {
		return s.errAt(shapePos, "%s.shape %v: %d elements of %d bits overflow 64 bits", ctx, e.shape, numel, bitw)
	}
	if nbits%8 != 0 { // R12
		return s.errAt(dtPos, "%s: %d elements of %d bits (%s) are not a whole number of bytes", ctx, numel, bitw, e.dt)
	}
	e.nbytes = nbits / 8
	if e.end < e.begin { // R10
		return s.errAt(offPos, "%s.data_offsets [%d, %d]: the end is before the start", ctx, e.begin, e.end)
	}
	if e.end-e.begin != e.nbytes { // R13
		return s.errAt(offPos, "%s.data_offsets [%d, %d] hold %d bytes; shape %v of %s needs %d",
			ctx, e.begin, e.end, e.end-e.begin, e.shape, e.dt, e.nbytes)
	}
	return nil
}

// checkTiling checks that entries in data order tile [0, total) with no
// gap and no overlap (R10), and returns total.
func checkTiling(es []entry) (uint64, error) {
	next := uint64(0)
	for i := range es {
		e := &es[i]
		if e.begin != next {
			what := "a gap"
			if e.begin < next {
				what = "an overlap"
			}
			return 0, format.Errorf(formatName, "header", e.pos,
				"header[%q].data_offsets [%d, %d]: %s in the data buffer: the tensor before it in data order ends at %d (tensors must tile the buffer from 0)",
				e.name, e.begin, e.end, what, next)
		}
		next = e.end
	}
	return next, nil
}

func cmpEntry(a, b entry) int {
	return cmp.Or(cmp.Compare(a.begin, b.begin), cmp.Compare(a.end, b.end))
}
