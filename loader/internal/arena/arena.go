// Package arena hands out the many small strings and slices a loader copies
// out of a FlatBuffer (keys, node names, shapes) from a few large
// allocations instead of one each.
//
// What an arena hands out stays valid for as long as anything refers to it;
// an arena never writes to memory it has handed out. The waste is bounded:
// a chunk is abandoned only when the next request does not fit in what is
// left of it, so what it leaves unused is less than that request; apart
// from the free end of the last chunk, at most half of the memory
// allocated is unused (a Strings request larger than a chunk gets a chunk
// of its own size; a Slices request of a quarter of a chunk or more, an
// allocation of its own).
package arena

import (
	"strings"
	"unsafe"
)

// Chunk is the size chunks grow to, in elements (bytes, for Strings: 4
// times as many).
const Chunk = 1024

// firstStrings is the size of a Strings arena's first chunk, and of a
// Slices arena's (or of one element, if larger), in bytes.
const firstStrings = 64

// Strings copies byte strings into shared chunks.
// The zero value is ready to use.
type Strings struct {
	buf []byte
}

// Copy returns a string with the bytes of b, which b may later change
// without affecting it.
func (a *Strings) Copy(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > cap(a.buf)-len(a.buf) {
		// Chunks double from 64 bytes up to 4 KiB: a program's few names
		// cost a small allocation, a .ptd's thousands of keys few large.
		a.buf = noZero(max(len(b), min(4*Chunk, max(firstStrings, 2*cap(a.buf)))))
	}
	n := len(a.buf)
	a.buf = append(a.buf, b...)
	// a.buf[n:] is never written again: the string owns those bytes
	return unsafe.String(&a.buf[n], len(b))
}

// noZero returns an empty byte slice of capacity size (at least 1) whose
// memory is not zeroed: a strings.Builder's, which the builder no longer
// uses. Strings writes every byte before it hands it out.
func noZero(size int) []byte {
	var sb strings.Builder
	sb.Grow(size)
	sb.WriteByte(0)
	return unsafe.Slice(unsafe.StringData(sb.String()), size)[:0]
}

// Slices hands out zeroed slices of T from shared chunks.
// The zero value is ready to use.
type Slices[T any] struct {
	buf []T
}

// Make returns a zeroed slice of n elements whose capacity is n, so that
// appending to it cannot reach into another slice. Make(0) returns an
// empty, non-nil slice.
func (a *Slices[T]) Make(n int) []T {
	if n == 0 {
		return []T{}
	}
	if n > cap(a.buf)-len(a.buf) {
		if n >= Chunk/4 {
			// A large slice gets an allocation of its own, and the
			// chunk in use stays in use.
			return make([]T, n)
		}
		// Chunks double from 64 bytes up to Chunk elements: a program's
		// few small slices cost a small allocation, thousands few large.
		var zero T
		first := max(1, firstStrings/max(1, int(unsafe.Sizeof(zero))))
		a.buf = make([]T, 0, max(n, min(Chunk, max(first, 2*cap(a.buf)))))
	}
	k := len(a.buf)
	a.buf = a.buf[:k+n]
	return a.buf[k : k+n : k+n]
}

// Copy returns a copy of src from the arena (an empty, non-nil slice when
// src is empty).
func (a *Slices[T]) Copy(src []T) []T {
	s := a.Make(len(src))
	copy(s, src)
	return s
}
