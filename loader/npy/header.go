package npy

import "fmt"

// header is what a .npy header's dict says.
type header struct {
	descr   string
	fortran bool
	shape   []int64
}

// headerError says where in the header text parsing stopped and why;
// unsupported marks a valid header this package does not read (a
// structured dtype).
type headerError struct {
	pos         int
	msg         string
	unsupported bool
}

// parser reads the Python dict literal np.save writes,
// "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }" padded
// with spaces and a newline: string keys and values, True and False,
// tuples of integers, and whitespace where Python allows it.
type parser struct {
	b   []byte
	i   int
	err *headerError
}

func (p *parser) fail(msg string, args ...any) {
	if p.err == nil {
		p.err = &headerError{pos: p.i, msg: fmt.Sprintf(msg, args...)}
	}
}

func (p *parser) ws() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

// eat skips whitespace and then c, if c is next.
func (p *parser) eat(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str reads a quoted string without escapes.
func (p *parser) str(what string) string {
	p.ws()
	if p.i >= len(p.b) || (p.b[p.i] != '\'' && p.b[p.i] != '"') {
		p.fail("want a quoted string for %s", what)
		return ""
	}
	q, start := p.b[p.i], p.i+1
	for k := start; k < len(p.b); k++ {
		switch p.b[k] {
		case q:
			p.i = k + 1
			return string(p.b[start:k])
		case '\\', '\n':
			p.fail("%s: escapes and line breaks in strings are not supported", what)
			return ""
		}
	}
	p.fail("%s: the string does not end", what)
	return ""
}

// boolean reads True or False.
func (p *parser) boolean() bool {
	p.ws()
	for _, w := range []string{"True", "False"} {
		if len(p.b)-p.i >= len(w) && string(p.b[p.i:p.i+len(w)]) == w {
			p.i += len(w)
			return w == "True"
		}
	}
	p.fail("fortran_order: want True or False")
	return false
}

// shape reads a tuple of non-negative integers, each optionally followed
// by Python 2's L.
func (p *parser) shape() []int64 {
	if !p.eat('(') {
		p.fail("shape: want a tuple")
		return nil
	}
	dims := []int64{}
	for !p.eat(')') {
		if len(dims) == maxDims {
			p.fail("shape: more than %d dimensions", maxDims)
			return nil
		}
		p.ws()
		start, d := p.i, int64(0)
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			if d > (1<<62)/10 {
				p.fail("shape: a dimension out of range")
				return nil
			}
			d = d*10 + int64(p.b[p.i]-'0')
			p.i++
		}
		if p.i == start {
			p.fail("shape: want a non-negative integer")
			return nil
		}
		if p.i < len(p.b) && p.b[p.i] == 'L' {
			p.i++
		}
		dims = append(dims, d)
		if !p.eat(',') {
			if !p.eat(')') {
				p.fail("shape: want ',' or ')'")
				return nil
			}
			if len(dims) == 1 {
				p.fail("shape: (%d) is not a tuple; want (%d,)", d, d)
			}
			break
		}
	}
	return dims
}

// parseHeader parses the header text, which must hold exactly the keys
// descr, fortran_order and shape, each once.
func parseHeader(b []byte) (header, *headerError) {
	p := &parser{b: b}
	var h header
	seen := map[string]bool{}
	if !p.eat('{') {
		p.fail("want a dict, '{'")
	}
	for p.err == nil && !p.eat('}') {
		key := p.str("a key")
		if p.err == nil && !p.eat(':') {
			p.fail("want ':' after key %q", key)
		}
		if p.err != nil {
			break
		}
		if seen[key] {
			p.fail("key %q given twice", key)
			break
		}
		seen[key] = true
		switch key {
		case "descr":
			if p.eat('[') {
				p.fail("descr is a list: a structured dtype is not supported")
				p.err.unsupported = true
				break
			}
			h.descr = p.str("descr")
		case "fortran_order":
			h.fortran = p.boolean()
		case "shape":
			h.shape = p.shape()
		default:
			p.fail("key %q: want only descr, fortran_order and shape", key)
		}
		if p.err != nil || p.eat(',') {
			continue
		}
		if !p.eat('}') {
			p.fail("want ',' or '}' after the value of %q", key)
		}
		break
	}
	if p.err == nil {
		if p.ws(); p.i != len(p.b) {
			p.fail("text after the dict")
		} else if !seen["descr"] || !seen["fortran_order"] || !seen["shape"] {
			p.fail("the header lacks one of descr, fortran_order and shape")
		}
	}
	return h, p.err
}
