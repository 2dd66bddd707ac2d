// Package fbcopy copies a FlatBuffer table by table, as the descriptions
// fbgen writes say (fbverify.TableDesc): every declared field keeps its
// presence and value, and a shared object is written once. It verifies
// every object it reads and refuses a field or union member the schema
// does not declare rather than drop it. An edit function sees every table
// before its fields are copied and may drop fields, set scalars or put
// objects of its own in their place: that is how the format packages
// rewrite their metadata.
package fbcopy

import (
	"encoding/binary"
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/fbverify"
)

// Copier copies one buffer.
type Copier struct {
	// B is the builder the copy is written with; an edit function builds
	// the objects it puts in place of fields with it.
	B *flatbuffers.Builder
	// Edit, when set, is called for every table of the input before its
	// fields are copied (once for a table several others share).
	Edit func(t *Table) error

	buf   []byte
	w     *fbverify.Walk
	memo  map[key]flatbuffers.UOffsetT
	marks []flatbuffers.UOffsetT
	fin   int64 // the size of the finished copy
}

// key names an object of the input already copied.
type key struct {
	desc *fbverify.TableDesc
	kind fbverify.Kind
	size int
	pos  int64
}

// New returns a Copier of buf; opt tunes the verification (the format's
// name and the buffer's file offset, for errors).
func New(buf []byte, opt fbverify.Options) *Copier {
	if opt.MaxObjects <= 0 {
		// Every field is visited, those the verifiers skip too: up to one
		// object per 4 bytes of a tree-shaped buffer.
		opt.MaxObjects = len(buf)/4 + 1024
	}
	return &Copier{
		B:    flatbuffers.NewBuilder(min(len(buf), 1<<20)),
		buf:  buf,
		w:    fbverify.NewWalk(buf, opt),
		memo: map[key]flatbuffers.UOffsetT{},
	}
}

// Copy copies the buffer from its root table, described by root, and
// finishes the copy with the file identifier ident (none when empty). It
// returns the copy, the Builder's bytes.
func (c *Copier) Copy(root *fbverify.TableDesc, ident string) ([]byte, error) {
	if len(c.buf) < 8 || int64(len(c.buf)) > fbverify.MaxSize {
		return nil, c.w.Finish(c.w.Fail(0, "FlatBuffer of %d bytes is not of a valid size", len(c.buf)), root.Name)
	}
	pos, err := c.w.Deref(0)
	if err == nil {
		var off flatbuffers.UOffsetT
		if off, err = c.table(root, pos, nil); err == nil {
			if ident != "" {
				c.B.FinishWithFileIdentifier(off, []byte(ident))
			} else {
				c.B.Finish(off)
			}
		}
	}
	if err != nil {
		return nil, c.w.Finish(err, root.Name)
	}
	out := c.B.FinishedBytes()
	c.fin = int64(len(out))
	return out, nil
}

// Mark names a scalar field of the copy whose position Position gives
// once the copy is finished (Table.Track).
type Mark int

// Position returns the position in the finished copy of the field m
// names: its value can be patched in place, for values known only once
// the copy's size is.
func (c *Copier) Position(m Mark) int64 { return c.fin - int64(c.marks[m]) }

// A field's state in the copy.
const (
	fieldCopy  = iota // copied from the input (the default)
	fieldDrop         // left out
	fieldValue        // a scalar value
	fieldRef          // an offset to an object of the copy
)

// out is what the copy writes for a field.
type out struct {
	state uint8
	size  uint8 // a scalar's size
	v     uint64
	ref   flatbuffers.UOffsetT
	mark  int // index in Copier.marks, -1 for none
}

// Table is a table of the input being copied. An edit function changes
// what the copy writes for its fields; fields it does not touch are
// copied.
type Table struct {
	// Desc describes the table and Pos is its position in the input.
	Desc *fbverify.TableDesc
	Pos  int64

	c   *Copier
	t   fbverify.T
	out []out
}

// Copier returns the copier the table is copied by.
func (t *Table) Copier() *Copier { return t.c }

// Has reports whether the input's table has field id.
func (t *Table) Has(id int) bool { return t.c.w.Slot(&t.t, id) != 0 }

// Uint returns the input's value of the scalar field id (its bytes as a
// little-endian unsigned number), 0 when the field is absent.
func (t *Table) Uint(id int) (uint64, error) {
	f := t.field(id)
	if f == nil || f.Kind != fbverify.KindScalar && f.Kind != fbverify.KindUnion {
		return 0, fmt.Errorf("fbcopy: %s has no scalar field %d", t.Desc.Name, id)
	}
	size := int64(f.Size)
	if f.Kind == fbverify.KindUnion {
		size = 1
	}
	v, _, err := t.c.scalar(&t.t, id, size)
	return v, err
}

// Ref returns the position in the input of the object the offset field id
// points to, 0 when the field is absent.
func (t *Table) Ref(id int) (int64, error) { return t.c.w.Ref(&t.t, id, false) }

// Drop leaves field id out of the copy (for a union, both its tag and its
// value). Drop, SetUint, Track and SetRef apply to a table being copied,
// not to one opened with Read.
func (t *Table) Drop(id int) {
	t.out[id].state = fieldDrop
	if f := t.field(id); f != nil && f.Kind == fbverify.KindUnion {
		t.out[id+1].state = fieldDrop
	}
}

// SetUint writes v as the scalar field id (a union's tag: one byte),
// present even if it is the field's default.
func (t *Table) SetUint(id int, v uint64) {
	size := 1
	if f := t.field(id); f != nil && f.Kind == fbverify.KindScalar {
		size = f.Size
	}
	o := &t.out[id]
	o.state, o.size, o.v = fieldValue, uint8(size), v
}

// Track asks for the position of the scalar field id in the finished copy
// (Copier.Position), which the field must then have: set with SetUint,
// or copied from the input.
func (t *Table) Track(id int) Mark {
	t.out[id].mark = len(t.c.marks)
	t.c.marks = append(t.c.marks, 0)
	return Mark(t.out[id].mark)
}

// SetRef writes off, an object of the copy the edit function built with
// the Builder, as the offset field id (a union's value: id+1).
func (t *Table) SetRef(id int, off flatbuffers.UOffsetT) {
	o := &t.out[id]
	o.state, o.ref = fieldRef, off
}

// CopyTable copies the table the table field id points to (for a union
// field, its value: the tag is copied with it) with edit applied after
// the Copier's Edit, and writes it as the field. A table copied this way
// is not shared with other references to it. An absent field stays
// absent.
func (t *Table) CopyTable(id int, edit func(*Table) error) error {
	f := t.field(id)
	if f == nil || f.Kind != fbverify.KindTable && f.Kind != fbverify.KindUnion {
		return fmt.Errorf("fbcopy: %s has no table or union field %d", t.Desc.Name, id)
	}
	if f.Kind == fbverify.KindTable {
		q, err := t.Ref(id)
		if err != nil || q == 0 {
			return err
		}
		off, err := t.c.table(f.Table, q, edit)
		if err != nil {
			return err
		}
		t.SetRef(id, off)
		return nil
	}
	tag, off, err := t.c.member(t, f, edit)
	if err != nil || tag == 0 {
		return err
	}
	t.SetUint(id, uint64(tag))
	t.SetRef(id+1, off)
	return nil
}

// Vector returns the position of the first element and the length of the
// vector of elem-byte elements field id points to, checked against the
// buffer (0, 0 when absent).
func (t *Table) Vector(id int, elem int64) (start, n int64, err error) {
	q, err := t.Ref(id)
	if err != nil || q == 0 {
		return 0, 0, err
	}
	return t.c.w.Vector(q, elem)
}

// CopyTable copies the table at pos, described by d, with edit applied
// after Edit (not shared, then, with other references to it; edit may be
// nil), and returns its offset in the copy: for an edit function that
// builds a field of its own (a vector of tables copied one by one).
func (c *Copier) CopyTable(d *fbverify.TableDesc, pos int64, edit func(*Table) error) (flatbuffers.UOffsetT, error) {
	return c.table(d, pos, edit)
}

// Input returns the buffer being copied: an edit function reads the
// elements of a vector Vector checked in it.
func (c *Copier) Input() []byte { return c.buf }

// Deref follows the offset at pos (an element of a vector Vector
// returned), checked against the buffer.
func (c *Copier) Deref(pos int64) (int64, error) { return c.w.Deref(pos) }

// Read opens the table at pos, described by d, for reading its fields
// (Has, Uint, Ref, Vector) and nothing else: to look at a table an edit
// function is not copying, such as the value of a union it drops.
func (c *Copier) Read(d *fbverify.TableDesc, pos int64) (*Table, error) {
	t, err := c.w.Start(pos)
	if err != nil {
		return nil, err
	}
	c.w.Leave()
	return &Table{Desc: d, Pos: pos, c: c, t: t}, nil
}

func (t *Table) field(id int) *fbverify.FieldDesc {
	for i := range t.Desc.Fields {
		if t.Desc.Fields[i].ID == id {
			return &t.Desc.Fields[i]
		}
	}
	return nil
}

// scalar reads the size-byte field id of t, checking it lies in the
// buffer: its value and whether it is present.
func (c *Copier) scalar(t *fbverify.T, id int, size int64) (uint64, bool, error) {
	fo := c.w.Slot(t, id)
	if fo == 0 {
		return 0, false, nil
	}
	if fo+size > t.Size() {
		if err := c.w.ScalarOutside(t, fo, size); err != nil {
			return 0, false, err
		}
	}
	p := t.Pos() + fo
	le := binary.LittleEndian
	switch size {
	case 1:
		return uint64(c.buf[p]), true, nil
	case 2:
		return uint64(le.Uint16(c.buf[p:])), true, nil
	case 4:
		return uint64(le.Uint32(c.buf[p:])), true, nil
	case 8:
		return le.Uint64(c.buf[p:]), true, nil
	}
	return 0, false, fmt.Errorf("fbcopy: scalar of %d bytes", size)
}

// table copies the table at pos described by d, with edit applied after
// the Copier's Edit (and then not shared).
func (c *Copier) table(d *fbverify.TableDesc, pos int64, edit func(*Table) error) (flatbuffers.UOffsetT, error) {
	k := key{desc: d, kind: fbverify.KindTable, pos: pos}
	if edit == nil {
		if off, ok := c.memo[k]; ok {
			return off, nil
		}
	}
	t, err := c.w.Start(pos)
	if err != nil {
		return 0, err
	}
	for id := d.Slots; id < t.Slots(); id++ {
		if c.w.Slot(&t, id) != 0 {
			return 0, c.w.Fail(pos, "%s has field %d, which this copy does not know and would drop", d.Name, id)
		}
	}
	tab := &Table{Desc: d, Pos: pos, c: c, t: t, out: make([]out, d.Slots)}
	for i := range tab.out {
		tab.out[i].mark = -1
	}
	for _, e := range []func(*Table) error{c.Edit, edit} {
		if e != nil {
			if err := e(tab); err != nil {
				return 0, err
			}
		}
	}
	for i := range d.Fields {
		if err := c.field(tab, &d.Fields[i]); err != nil {
			return 0, c.w.At(err, d.Fields[i].Name, -1)
		}
	}
	c.w.Leave()
	if err := c.room(8 * int64(len(tab.out))); err != nil {
		return 0, err
	}
	off := c.build(tab)
	if edit == nil {
		c.memo[k] = off
	}
	return off, nil
}

// field copies field f of tab, unless the edit functions decided what to
// write for it.
func (c *Copier) field(tab *Table, f *fbverify.FieldDesc) error {
	o := &tab.out[f.ID]
	if o.state != fieldCopy {
		return nil
	}
	t := &tab.t
	switch f.Kind {
	case fbverify.KindScalar:
		v, ok, err := c.scalar(t, f.ID, int64(f.Size))
		if err != nil || !ok {
			o.state = fieldDrop
			return err
		}
		o.state, o.size, o.v = fieldValue, uint8(f.Size), v
		return nil
	case fbverify.KindUnion:
		val := &tab.out[f.ID+1]
		if val.state != fieldCopy {
			return fmt.Errorf("the value of union %s is set without its tag", f.Name)
		}
		tag, off, err := c.member(tab, f, nil)
		if err != nil || tag == 0 {
			o.state, val.state = fieldDrop, fieldDrop
			return err
		}
		o.state, o.size, o.v = fieldValue, 1, uint64(tag)
		val.state, val.ref = fieldRef, off
		return nil
	}
	q, err := c.w.Ref(t, f.ID, false)
	if err != nil || q == 0 {
		o.state = fieldDrop
		return err
	}
	off, err := c.object(f, q)
	if err != nil {
		return err
	}
	o.state, o.ref = fieldRef, off
	return nil
}

// member copies the value of union field f of tab, with edit applied after
// Edit, and returns its tag (0: none) and its offset in the copy.
func (c *Copier) member(tab *Table, f *fbverify.FieldDesc, edit func(*Table) error) (int, flatbuffers.UOffsetT, error) {
	tag, q, err := c.w.Union(&tab.t, f.ID)
	if err != nil || tag == 0 {
		return 0, 0, err
	}
	if tag >= len(f.Members) || f.Members[tag] == nil {
		return 0, 0, c.w.Fail(tab.Pos, "union member %d, which this copy does not know", tag)
	}
	off, err := c.table(f.Members[tag], q, edit)
	return tag, off, err
}

// object copies the string, vector or table at q that field f points to.
func (c *Copier) object(f *fbverify.FieldDesc, q int64) (flatbuffers.UOffsetT, error) {
	if f.Kind == fbverify.KindTable {
		return c.table(f.Table, q, nil)
	}
	k := key{desc: f.Table, kind: f.Kind, size: f.Size, pos: q}
	if off, ok := c.memo[k]; ok {
		return off, nil
	}
	var off flatbuffers.UOffsetT
	b := c.B
	switch f.Kind {
	case fbverify.KindString:
		if err := c.w.String(q); err != nil {
			return 0, err
		}
		n := int64(binary.LittleEndian.Uint32(c.buf[q:]))
		if err := c.room(n); err != nil {
			return 0, err
		}
		off = b.CreateByteString(c.buf[q+4 : q+4+n])
	case fbverify.KindVector:
		start, n, err := c.w.Vector(q, int64(f.Size))
		if err != nil {
			return 0, err
		}
		raw := c.buf[start : start+n*int64(f.Size)]
		if err := c.room(int64(len(raw))); err != nil {
			return 0, err
		}
		b.StartVector(f.Size, int(n), max(f.Size, f.Align))
		for i := len(raw) - 1; i >= 0; i-- {
			b.PlaceByte(raw[i])
		}
		off = b.EndVector(int(n))
	case fbverify.KindTables, fbverify.KindStrings:
		start, n, err := c.w.Vector(q, 4)
		if err != nil {
			return 0, err
		}
		offs := make([]flatbuffers.UOffsetT, n)
		for i := range offs {
			e, err := c.w.Deref(start + 4*int64(i))
			if err == nil {
				if f.Kind == fbverify.KindTables {
					offs[i], err = c.table(f.Table, e, nil)
				} else {
					offs[i], err = c.object(&fbverify.FieldDesc{Kind: fbverify.KindString}, e)
				}
			}
			if err != nil {
				return 0, c.w.At(err, "", i)
			}
		}
		if err := c.room(4 * n); err != nil {
			return 0, err
		}
		b.StartVector(4, len(offs), 4)
		for i := len(offs) - 1; i >= 0; i-- {
			b.PrependUOffsetT(offs[i])
		}
		off = b.EndVector(len(offs))
	default:
		return 0, fmt.Errorf("field %s of kind %d", f.Name, f.Kind)
	}
	c.memo[k] = off
	return off, nil
}

// MaxSize is the largest copy: the Builder's buffer grows by doubling and
// refuses, by panicking, to grow past 1 GiB.
const MaxSize = 1<<30 - 64<<10

// room checks that n more bytes (and the padding and vtables around them)
// keep the copy within MaxSize.
func (c *Copier) room(n int64) error {
	if int64(c.B.Offset())+n > MaxSize {
		return c.w.Fail(-1, "the copy would take more than %d bytes", MaxSize)
	}
	return nil
}

// build writes the table tab's fields say, the largest first so that
// they need little padding.
func (c *Copier) build(tab *Table) flatbuffers.UOffsetT {
	b := c.B
	b.StartObject(tab.Desc.Slots)
	for _, size := range []uint8{8, 4, 2, 1} {
		for id := range tab.out {
			o := &tab.out[id]
			switch {
			case o.state == fieldValue && o.size == size:
				switch size {
				case 8:
					b.PrependUint64(o.v)
				case 4:
					b.PrependUint32(uint32(o.v))
				case 2:
					b.PrependUint16(uint16(o.v))
				default:
					b.PrependByte(byte(o.v))
				}
			case o.state == fieldRef && size == 4:
				b.PrependUOffsetT(o.ref)
			default:
				continue
			}
			b.Slot(id)
			if o.mark >= 0 {
				c.marks[o.mark] = b.Offset()
			}
		}
	}
	return b.EndObject()
}
