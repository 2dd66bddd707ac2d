// Package nameindex finds an entry of a list by its name: the name index of
// a tensor or named-data list, where a repeated name resolves to its first
// entry.
//
// An Index is an open-addressing hash table of positions: 8 bytes a slot
// and two to four slots an entry, no pointers for the garbage collector to
// scan, built in one pass without copying a name, and looked up without
// allocating. The names stay in the list; the table keeps a hash tag beside
// each position and compares a name only when the tags match. The hash is
// seeded per index (hash/maphash), so a file cannot be crafted to make its
// names collide.
package nameindex

import (
	"hash/maphash"
	"math"
)

// Index maps names to the position of their first occurrence in a list of
// n names. The zero Index is empty.
type Index struct {
	slots []uint64 // tag<<32 | position+1; 0: empty
	seed  maphash.Seed
	key   func(int) string
	room  int // positions Make made room for (at most half the slots)
}

// New indexes the n names key(0), ..., key(n-1): Lookup(key(i)) returns
// the smallest j with key(j) == key(i). key must return the same names for
// as long as the index is used. New panics if n is negative or not below
// math.MaxUint32 (no list of a file's names comes near: a FlatBuffer is
// under 2 GiB).
func New(n int, key func(int) string) Index {
	x := Make(n, key)
	for i := 0; i < n; i++ {
		x.Insert(i)
	}
	return x
}

// Make returns an empty index with room for the names of positions 0 to
// n-1, which Insert adds one at a time (a reader that must report a
// repeated name where it first meets it). It panics as New does.
func Make(n int, key func(int) string) Index {
	if n < 0 || uint64(n) >= math.MaxUint32 {
		panic("nameindex: list length out of range")
	}
	if n == 0 {
		return Index{}
	}
	size := 8
	for size < 2*n {
		size <<= 1
	}
	return Index{slots: make([]uint64, size), seed: maphash.MakeSeed(), key: key, room: n}
}

// Insert adds position i, with the name key(i), unless a position already
// added has the same name: then it adds nothing and returns that position
// and true. It panics when i is outside the room Make gave. (A position
// added again finds its own name, so the table never holds more than room
// positions: over half its slots stay empty and every probe ends.)
func (x *Index) Insert(i int) (first int, repeat bool) {
	if i < 0 || i >= x.room {
		panic("nameindex: Insert beyond the index's room")
	}
	k, slot, tag := x.find(x.key(i))
	if k >= 0 {
		return k, true // the first keeps the name
	}
	x.slots[slot] = tag<<32 | uint64(i+1)
	return 0, false
}

// Lookup returns the position of the first name in the list equal to name.
// It allocates nothing.
func (x *Index) Lookup(name string) (int, bool) {
	if len(x.slots) == 0 {
		return 0, false
	}
	k, _, _ := x.find(name)
	return k, k >= 0
}

// find returns the position holding name, or -1 and the empty slot where
// it would go, with its hash tag.
func (x *Index) find(name string) (pos int, slot, tag uint64) {
	h := maphash.String(x.seed, name)
	tag, mask := h>>32, uint64(len(x.slots)-1)
	for j := h & mask; ; j = (j + 1) & mask {
		e := x.slots[j]
		if e == 0 {
			return -1, j, tag
		}
		if e>>32 == tag {
			if k := int(uint32(e)) - 1; x.key(k) == name {
				return k, j, tag
			}
		}
	}
}
