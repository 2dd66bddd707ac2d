package safetensors

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/edgeload/edgeload/loader/format"
)

// maxDepth bounds the nesting of arrays and objects in a header, as
// serde_json's recursion limit does.
const maxDepth = 128

// scanner reads the JSON subset of a safetensors header (and of a sharded
// checkpoint's index) from b without building a tree: the caller asks for
// the next token it expects. Strings must be valid UTF-8 with no lone
// surrogate escape; numbers read as u64 must be plain non-negative
// integers. Every error is a *format.FormatError at base+pos.
type scanner struct {
	b     []byte
	pos   int
	base  int64  // file offset of b[0]
	field string // what the scanner reads, for errors ("header", "index")
	buf   []byte // the decoded string when it had escapes

	// While named is set, errors begin with at[name] (the entry being
	// read): built only when an error is, so reading allocates nothing
	// for it.
	named    bool
	at, name string
}

func (s *scanner) errorf(msg string, args ...any) error {
	return s.wrapAt(format.ErrMalformed, s.pos, msg, args...)
}

// errAt is errorf at position pos of b.
func (s *scanner) errAt(pos int, msg string, args ...any) error {
	return s.wrapAt(format.ErrMalformed, pos, msg, args...)
}

// wrapAt is errAt wrapping sentinel.
func (s *scanner) wrapAt(sentinel error, pos int, msg string, args ...any) error {
	text := fmt.Sprintf(msg, args...)
	if s.named {
		text = s.at + "[" + strconv.Quote(s.name) + "]" + text
	}
	return format.Wrapf(sentinel, formatName, s.field, s.base+int64(pos), "%s", text)
}

// enter makes errors name the entry at[name] until leave.
func (s *scanner) enter(at, name string) { s.named, s.at, s.name = true, at, name }

func (s *scanner) leave() { s.named = false }

// what describes the byte at the current position for an error.
func (s *scanner) what() string {
	if s.pos >= len(s.b) {
		return "the end of the JSON"
	}
	c := s.b[s.pos]
	if c >= 0x20 && c < 0x7f {
		return "'" + string(c) + "'"
	}
	return "byte " + hex2(c)
}

func hex2(c byte) string { return fmt.Sprintf("0x%02x", c) }

// ws skips JSON whitespace (space, tab, CR, LF).
func (s *scanner) ws() {
	for s.pos < len(s.b) {
		switch s.b[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the byte at the current position, 0 at the end.
func (s *scanner) peek() byte {
	if s.pos < len(s.b) {
		return s.b[s.pos]
	}
	return 0
}

// expect consumes byte c after whitespace.
func (s *scanner) expect(c byte, ctx string) error {
	s.ws()
	if s.peek() != c {
		return s.errorf("%s: want '%c', found %s", ctx, c, s.what())
	}
	s.pos++
	return nil
}

// open consumes the opening byte c of an object or array, after
// whitespace, and reports whether an element follows: an empty one is
// consumed up to its closing byte end.
func (s *scanner) open(c, end byte, ctx string) (bool, error) {
	if err := s.expect(c, ctx); err != nil {
		return false, err
	}
	s.ws()
	if s.peek() == end {
		s.pos++
		return false, nil
	}
	return true, nil
}

// more is called after an element of an array or a member of an object:
// it consumes ',' (true) or the closing byte end (false).
func (s *scanner) more(end byte, ctx string) (bool, error) {
	s.ws()
	switch s.peek() {
	case ',':
		s.pos++
		return true, nil
	case end:
		s.pos++
		return false, nil
	}
	return false, s.errorf("%s: want ',' or '%c', found %s", ctx, end, s.what())
}

// str reads a string. The result is a slice of the header or of s.buf,
// valid until the next call.
func (s *scanner) str(ctx string) ([]byte, error) {
	s.ws()
	if s.peek() != '"' {
		return nil, s.errorf("%s: want a string, found %s", ctx, s.what())
	}
	s.pos++
	start := s.pos
	// Fast path: printable ASCII up to the closing quote.
	for i := start; i < len(s.b); i++ {
		c := s.b[i]
		if c == '"' {
			s.pos = i + 1
			return s.b[start:i], nil
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			break
		}
	}
	s.buf = s.buf[:0]
	i := start
	for {
		if i >= len(s.b) {
			return nil, s.errAt(start-1, "%s: string not terminated", ctx)
		}
		c := s.b[i]
		switch {
		case c == '"':
			s.pos = i + 1
			return s.buf, nil
		case c < 0x20:
			return nil, s.errAt(i, "%s: control character %s in a string", ctx, hex2(c))
		case c < 0x80 && c != '\\':
			s.buf = append(s.buf, c)
			i++
		case c >= 0x80:
			r, n := utf8.DecodeRune(s.b[i:])
			if r == utf8.RuneError && n <= 1 {
				return nil, s.errAt(i, "%s: invalid UTF-8 (byte %s)", ctx, hex2(c))
			}
			s.buf = append(s.buf, s.b[i:i+n]...)
			i += n
		default: // backslash
			if i+1 >= len(s.b) {
				return nil, s.errAt(i, "%s: string not terminated", ctx)
			}
			e := s.b[i+1]
			i += 2
			switch {
			case unescape[e] != 0:
				s.buf = append(s.buf, unescape[e])
			case e == 'u':
				r, ok := hex4(s.b, i)
				if !ok {
					return nil, s.errAt(i-2, "%s: bad \\u escape", ctx)
				}
				i += 4
				if utf16.IsSurrogate(r) {
					lo, ok := rune(0), false
					if r < 0xdc00 && i+6 <= len(s.b) && s.b[i] == '\\' && s.b[i+1] == 'u' {
						lo, ok = hex4(s.b, i+2)
						ok = ok && lo >= 0xdc00 && lo <= 0xdfff
					}
					if !ok {
						return nil, s.errAt(i-6, "%s: lone surrogate in a \\u escape", ctx)
					}
					r = utf16.DecodeRune(r, lo)
					i += 6
				}
				s.buf = utf8.AppendRune(s.buf, r)
			default:
				return nil, s.errAt(i-2, "%s: bad escape '\\%c'", ctx, e)
			}
		}
	}
}

// unescape maps the byte after a backslash to the byte it stands for (0:
// none, or a \u escape).
var unescape = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// hex4 reads the 4 hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(b) {
		return 0, false
	}
	r, err := strconv.ParseUint(string(b[i:i+4]), 16, 32)
	return rune(r), err == nil
}

// countElems returns the number of elements of the array whose '[' was
// just read, counting the commas before the next ']' (a nested or
// malformed array gives a count its reading then refuses).
func (s *scanner) countElems() int {
	n := 0
	for i := s.pos; i < len(s.b); i++ {
		switch s.b[i] {
		case ' ', '\t', '\n', '\r':
		case ']':
			return n
		case ',':
			n++
		default:
			if n == 0 {
				n = 1
			}
		}
	}
	return n
}

// u64 reads a non-negative integer that fits in 64 bits, written without
// sign, fraction or exponent (serde_json's u64).
func (s *scanner) u64(ctx string) (uint64, error) {
	s.ws()
	start := s.pos
	var v uint64
	for s.pos < len(s.b) && s.b[s.pos] >= '0' && s.b[s.pos] <= '9' {
		d := uint64(s.b[s.pos] - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, s.errAt(start, "%s: integer does not fit in 64 bits", ctx)
		}
		v = v*10 + d
		s.pos++
	}
	switch {
	case s.pos == start:
		return 0, s.errorf("%s: want a non-negative integer, found %s", ctx, s.what())
	case s.b[start] == '0' && s.pos > start+1:
		return 0, s.errAt(start, "%s: integer with a leading zero", ctx)
	}
	if c := s.peek(); c == '.' || c == 'e' || c == 'E' {
		return 0, s.errAt(start, "%s: want an integer, found a number with a fraction or exponent", ctx)
	}
	return v, nil
}

// skip reads any JSON value and discards it; depth is the nesting it is
// found at.
func (s *scanner) skip(depth int, ctx string) error {
	if depth > maxDepth {
		return s.errorf("%s: nested deeper than %d", ctx, maxDepth)
	}
	s.ws()
	switch c := s.peek(); {
	case c == '"':
		_, err := s.str(ctx)
		return err
	case c == '{' || c == '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		more, err := s.open(c, end, ctx)
		for more && err == nil {
			if c == '{' {
				if _, err := s.str(ctx); err != nil {
					return err
				}
				if err := s.expect(':', ctx); err != nil {
					return err
				}
			}
			if err := s.skip(depth+1, ctx); err != nil {
				return err
			}
			more, err = s.more(end, ctx)
		}
		return err
	case c == '-' || c >= '0' && c <= '9':
		return s.number(ctx)
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if s.literal(lit) {
				return nil
			}
		}
		return s.errorf("%s: want a JSON value, found %s", ctx, s.what())
	}
}

// literal consumes lit if it comes next.
func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.pos >= len(lit) && string(s.b[s.pos:s.pos+len(lit)]) == lit {
		s.pos += len(lit)
		return true
	}
	return false
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number(ctx string) error {
	start := s.pos
	digits := func() int {
		n := 0
		for s.pos < len(s.b) && s.b[s.pos] >= '0' && s.b[s.pos] <= '9' {
			s.pos++
			n++
		}
		return n
	}
	if s.peek() == '-' {
		s.pos++
	}
	first := s.pos
	if n := digits(); n == 0 || n > 1 && s.b[first] == '0' {
		return s.errAt(start, "%s: malformed number", ctx)
	}
	if s.peek() == '.' {
		s.pos++
		if digits() == 0 {
			return s.errAt(start, "%s: malformed number", ctx)
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.pos++
		if c := s.peek(); c == '+' || c == '-' {
			s.pos++
		}
		if digits() == 0 {
			return s.errAt(start, "%s: malformed number", ctx)
		}
	}
	return nil
}
