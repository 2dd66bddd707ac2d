package fbverify

// Descriptions of a schema's tables, which internal/schema/fbgen writes
// beside the verifiers (XDesc for table X): code that copies a buffer
// field by field (internal/fbcopy) follows them.

// Kind is the wire shape of a field.
type Kind uint8

// The field kinds.
const (
	KindScalar  Kind = iota + 1 // Size bytes inline
	KindString                  // a string
	KindVector                  // a vector of Size-byte scalars
	KindTable                   // a table Table describes
	KindTables                  // a vector of tables Table describes
	KindStrings                 // a vector of strings
	KindUnion                   // a union: its tag (a byte) at ID, its value at ID+1
)

// TableDesc describes a table: its fields, in id order.
type TableDesc struct {
	Name   string
	Fields []FieldDesc
	// Slots is the number of field ids the table uses (a union takes
	// two): a field id at or past it is one the schema does not know.
	Slots int
}

// FieldDesc describes a field of a table.
type FieldDesc struct {
	Name string
	ID   int
	Kind Kind
	// Size is a scalar's size in bytes, or a KindVector's element size.
	Size int
	// Align is a KindVector's alignment when the schema forces one
	// (force_align), 0 otherwise.
	Align int
	// Table describes a KindTable's table or a KindTables' elements.
	Table *TableDesc
	// Members describes a KindUnion's members by tag (nil: a tag the
	// schema does not list).
	Members []*TableDesc
}
