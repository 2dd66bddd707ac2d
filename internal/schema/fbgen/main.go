// Command fbgen writes, for a FlatBuffers schema, a Go verifier per table:
// straight-line code built of package fbverify's steps (vtable, each
// field's bounds, vectors, strings, nested tables, unions), with 64-bit
// offset arithmetic. It reads the subset of the schema language the
// project's .fbs files use: namespace, include, attribute, enum, union,
// table, root_type, file_identifier; no structs.
//
// Usage: go run ./fbgen [FILE.fbs...] (from internal/schema; no files:
// every *.fbs there that no other includes): for each schema it writes
// verify_gen.go into the directory named by the schema's namespace, with
// the verifiers of the tables of the files it includes (include
// "FILE.fbs", of the same namespace) too.
//
// A table attribute, (visit), makes the verifier tell the walk's visitor
// (fbverify.Walk.SetVisitor) of each table of the type it has verified,
// with its vtable, so that a loader reads what it needs as the walk goes
// (the generated Visit<Table> constants name the kinds).
//
// Field attributes tune the verifier: (lazy) on a vector of tables
// leaves its elements, and on a table field the table, to the walk's
// caller when the walk is lazy (fbverify.Walk.SetLazy; the offsets are
// checked); (open) on a union field verifies a tag past
// the known members as a table without fields instead of refusing it;
// (unread) marks a field no loader reads, which the verifier skips;
// (opaque) on a union field checks only that an unknown tag's value offset
// lands in the buffer (its members may be structs the schema leaves out).
//
// Union members may carry explicit tags (Member = 16): the schema then
// lists only the members a loader reads, and every field of that union
// type must be (open) or (opaque), so that the tags it leaves out are
// accepted.
package main

import (
	"bytes"
	"fmt"
	"go/format"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

func main() {
	files := os.Args[1:]
	if len(files) == 0 {
		files = roots()
	}
	for _, f := range files {
		if err := run(f); err != nil {
			fmt.Fprintln(os.Stderr, "fbgen:", err)
			os.Exit(1)
		}
	}
}

type field struct {
	name     string
	typ      string // scalar name, "string", an enum, union or table name
	vector   bool
	required bool
	lazy     bool
	open     bool
	opaque   bool
	depr     bool
	align    int // force_align, 0 when not given
	id       int // the field id (a union takes two: its tag's and id+1)
}

type table struct {
	name   string
	fields []field
	visit  bool // (visit): the walk's visitor is told of each one verified
	slots  int  // the number of field ids
}

// member is a union member and its tag.
type member struct {
	name string
	tag  int
}

// explicit reports whether the union's tags are not 1..n in order.
func explicit(ms []member) bool {
	for k, m := range ms {
		if m.tag != k+1 {
			return true
		}
	}
	return false
}

type schema struct {
	ns       string
	includes []string          // the files it includes, relative to its own
	enums    map[string]string // name: underlying scalar
	unions   map[string][]member
	tables   []*table
	byName   map[string]*table
}

var scalarSize = map[string]int{
	"bool": 1, "byte": 1, "ubyte": 1, "int8": 1, "uint8": 1,
	"short": 2, "ushort": 2, "int16": 2, "uint16": 2,
	"int": 4, "uint": 4, "int32": 4, "uint32": 4, "float": 4, "float32": 4,
	"long": 8, "ulong": 8, "int64": 8, "uint64": 8, "double": 8, "float64": 8,
}

func tokenize(src string) []string {
	var toks []string
	for _, line := range strings.Split(src, "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		for i := 0; i < len(line); {
			c := rune(line[i])
			switch {
			case unicode.IsSpace(c):
				i++
			case c == '"':
				j := strings.IndexByte(line[i+1:], '"')
				toks = append(toks, line[i:i+j+2])
				i += j + 2
			case unicode.IsLetter(c) || unicode.IsDigit(c) || c == '_' || c == '-' || c == '.':
				j := i
				for j < len(line) && (unicode.IsLetter(rune(line[j])) || unicode.IsDigit(rune(line[j])) || strings.ContainsRune("_-.", rune(line[j]))) {
					j++
				}
				toks = append(toks, line[i:j])
				i = j
			default:
				toks = append(toks, string(c))
				i++
			}
		}
	}
	return toks
}

func parse(src string) (*schema, error) {
	s := &schema{enums: map[string]string{}, unions: map[string][]member{}, byName: map[string]*table{}}
	t := tokenize(src)
	i := 0
	next := func() string {
		if i >= len(t) {
			return ""
		}
		i++
		return t[i-1]
	}
	skipTo := func(tok string) {
		for i < len(t) && t[i] != tok {
			i++
		}
		i++
	}
	for i < len(t) {
		switch kw := next(); kw {
		case "namespace":
			s.ns = next()
			skipTo(";")
		case "include":
			s.includes = append(s.includes, strings.Trim(next(), `"`))
			skipTo(";")
		case "attribute", "root_type", "file_identifier", "file_extension":
			skipTo(";")
		case "enum":
			name := next()
			if next() != ":" {
				return nil, fmt.Errorf("enum %s: want an underlying type", name)
			}
			s.enums[name] = next()
			skipTo("}")
		case "union":
			name := next()
			next() // {
			var members []member
			for i < len(t) && t[i] != "}" {
				m := next()
				if m == "," {
					continue
				}
				tag := len(members) + 1
				if len(members) > 0 {
					tag = members[len(members)-1].tag + 1
				}
				if i < len(t) && t[i] == ":" {
					return nil, fmt.Errorf("union %s: aliases are not supported", name)
				}
				if i < len(t) && t[i] == "=" {
					next()
					v, err := strconv.Atoi(next())
					if err != nil || v < tag || v > 255 {
						return nil, fmt.Errorf("union %s: member %s: want a tag in [%d, 255]", name, m, tag)
					}
					tag = v
				}
				members = append(members, member{m, tag})
			}
			next()
			s.unions[name] = members
		case "table":
			tb := &table{name: next()}
			if i < len(t) && t[i] == "(" {
				for next(); i < len(t) && t[i] != ")"; {
					if a := next(); a == "visit" {
						tb.visit = true
					}
				}
				next() // )
			}
			next() // {
			for i < len(t) && t[i] != "}" {
				f := field{name: next()}
				if next() != ":" {
					return nil, fmt.Errorf("table %s: field %s: want ':'", tb.name, f.name)
				}
				if t[i] == "[" {
					next()
					f.vector, f.typ = true, next()
					next() // ]
				} else {
					f.typ = next()
				}
				for i < len(t) && t[i] != ";" {
					switch tok := next(); tok {
					case "=":
						next()
					case "(":
						for i < len(t) && t[i] != ")" {
							switch a := next(); a {
							case "required":
								f.required = true
							case "lazy":
								f.lazy = true
							case "open":
								f.open = true
							case "opaque":
								f.opaque = true
							case "deprecated", "unread":
								f.depr = true
							case "force_align":
								if i+1 < len(t) && t[i] == ":" {
									next()
									a, err := strconv.Atoi(next())
									if err != nil || a <= 0 || a&(a-1) != 0 {
										return nil, fmt.Errorf("table %s: field %s: force_align wants a power of two", tb.name, f.name)
									}
									f.align = a
								}
							case "id":
								return nil, fmt.Errorf("table %s: field %s: id attributes are not supported", tb.name, f.name)
							}
						}
						next()
					}
				}
				next() // ;
				tb.fields = append(tb.fields, f)
			}
			next()
			s.tables = append(s.tables, tb)
			s.byName[tb.name] = tb
		case "struct":
			return nil, fmt.Errorf("structs are not supported")
		default:
			return nil, fmt.Errorf("unexpected %q", kw)
		}
	}
	return s, nil
}

// size returns the inline size of a scalar or enum type, 0 otherwise.
func (s *schema) size(typ string) int {
	if e, ok := s.enums[typ]; ok {
		typ = e
	}
	return scalarSize[typ]
}

// roots returns the *.fbs files of the current directory that no other
// one includes (an included file's tables are written with its
// includer's).
func roots() []string {
	files, _ := filepath.Glob("*.fbs")
	included := map[string]bool{}
	for _, f := range files {
		if s, err := load(f); err == nil {
			for _, inc := range s.includes {
				included[filepath.Join(filepath.Dir(f), inc)] = true
			}
		}
	}
	var out []string
	for _, f := range files {
		if !included[filepath.Clean(f)] {
			out = append(out, f)
		}
	}
	return out
}

// load parses the schema at path.
func load(path string) (*schema, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if s.ns == "" {
		return nil, fmt.Errorf("%s: no namespace", path)
	}
	return s, nil
}

// merge adds the enums, unions and tables of the files s includes (of the
// same namespace), and of theirs, to s.
func (s *schema) merge(dir string) error {
	for _, inc := range s.includes {
		path := filepath.Join(dir, inc)
		t, err := load(path)
		if err != nil {
			return err
		}
		if t.ns != s.ns {
			return fmt.Errorf("%s: namespace %s, want its includer's %s", path, t.ns, s.ns)
		}
		if err := t.merge(filepath.Dir(path)); err != nil {
			return err
		}
		maps.Copy(s.enums, t.enums)
		maps.Copy(s.unions, t.unions)
		for _, tb := range t.tables {
			if s.byName[tb.name] != nil {
				return fmt.Errorf("%s: table %s is defined twice", path, tb.name)
			}
			s.tables = append(s.tables, tb)
			s.byName[tb.name] = tb
		}
	}
	return nil
}

func run(path string) error {
	s, err := load(path)
	if err != nil {
		return err
	}
	if err := s.merge(filepath.Dir(path)); err != nil {
		return err
	}
	for _, tb := range s.tables {
		for i := range tb.fields {
			tb.fields[i].id = tb.slots
			if tb.slots++; s.unions[tb.fields[i].typ] != nil && !tb.fields[i].vector {
				tb.slots++
			}
		}
	}
	var b bytes.Buffer
	from := filepath.Base(path)
	for _, inc := range s.includes {
		from += " and " + filepath.Base(inc)
	}
	fmt.Fprintf(&b, "// Code generated by fbgen from %s. DO NOT EDIT.\n\n", from)
	fmt.Fprintf(&b, "package %s\n\nimport \"github.com/edgeload/edgeload/internal/fbverify\"\n\n", s.ns)
	var visited []string
	for _, tb := range s.tables {
		if err := s.gen(&b, tb); err != nil {
			return fmt.Errorf("%s: table %s: %v", path, tb.name, err)
		}
		if tb.visit {
			visited = append(visited, tb.name)
		}
	}
	if len(visited) > 0 {
		fmt.Fprintf(&b, "// The kinds of the tables the schema marks (visit), as a walk's visitor\n// (fbverify.Walk.SetVisitor) is told them.\nconst (\n")
		for k, name := range visited {
			if k == 0 {
				fmt.Fprintf(&b, "Visit%s = iota + 1\n", name)
			} else {
				fmt.Fprintf(&b, "Visit%s\n", name)
			}
		}
		fmt.Fprintf(&b, ")\n")
	}
	out, err := format.Source(b.Bytes())
	if err != nil {
		return fmt.Errorf("%s: formatting the output: %v", path, err)
	}
	dir := filepath.Join(filepath.Dir(path), s.ns)
	if err := os.WriteFile(filepath.Join(dir, "verify_gen.go"), out, 0o644); err != nil {
		return err
	}
	b.Reset()
	fmt.Fprintf(&b, "// Code generated by fbgen from %s. DO NOT EDIT.\n\n", filepath.Base(path))
	fmt.Fprintf(&b, "package %s\n\nimport \"github.com/edgeload/edgeload/internal/fbverify\"\n\n", s.ns)
	if err := s.genDescs(&b); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if out, err = format.Source(b.Bytes()); err != nil {
		return fmt.Errorf("%s: formatting the descriptions: %v", path, err)
	}
	return os.WriteFile(filepath.Join(dir, "desc_gen.go"), out, 0o644)
}

// genDescs writes a description of every table (fbverify.TableDesc),
// XDesc for table X, for code that copies a buffer field by field: every
// field, those the verifier skips included, with its id and wire shape.
// The descriptions refer to one another, so their fields are filled in by
// init.
func (s *schema) genDescs(b *bytes.Buffer) error {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("// The tables' descriptions (fbverify.TableDesc), XDesc for table X.\nvar (\n")
	for _, tb := range s.tables {
		p("%sDesc = &fbverify.TableDesc{Name: %q, Slots: %d}\n", tb.name, tb.name, tb.slots)
	}
	p(")\n\nfunc init() {\n")
	for _, tb := range s.tables {
		if len(tb.fields) == 0 {
			continue
		}
		p("%sDesc.Fields = []fbverify.FieldDesc{\n", tb.name)
		for _, f := range tb.fields {
			var kind, extra string
			switch {
			case f.vector && f.typ == "string":
				kind = "Strings"
			case f.vector && s.byName[f.typ] != nil:
				kind, extra = "Tables", fmt.Sprintf(", Table: %sDesc", f.typ)
			case f.vector:
				sz := s.size(f.typ)
				if sz == 0 {
					return fmt.Errorf("table %s: field %s: vector of %s", tb.name, f.name, f.typ)
				}
				kind, extra = "Vector", fmt.Sprintf(", Size: %d", sz)
				if f.align > 0 {
					extra += fmt.Sprintf(", Align: %d", f.align)
				}
			case f.typ == "string":
				kind = "String"
			case s.byName[f.typ] != nil:
				kind, extra = "Table", fmt.Sprintf(", Table: %sDesc", f.typ)
			case s.unions[f.typ] != nil:
				var list []string
				for _, m := range s.unions[f.typ] {
					list = append(list, fmt.Sprintf("%d: %sDesc", m.tag, m.name))
				}
				kind, extra = "Union", fmt.Sprintf(", Members: []*fbverify.TableDesc{%s}", strings.Join(list, ", "))
			default:
				sz := s.size(f.typ)
				if sz == 0 {
					return fmt.Errorf("table %s: field %s: unknown type %s", tb.name, f.name, f.typ)
				}
				kind, extra = "Scalar", fmt.Sprintf(", Size: %d", sz)
			}
			p("{Name: %q, ID: %d, Kind: fbverify.Kind%s%s},\n", f.name, f.id, kind, extra)
		}
		p("}\n")
	}
	p("}\n")
	return nil
}

// bare reports whether the table has no field the verifier reads: its
// verifier checks the table alone (fbverify.Walk.Bare), with no memo.
func bare(tb *table) bool {
	return !slices.ContainsFunc(tb.fields, func(f field) bool { return !f.depr })
}

// maxEmbedMembers is the largest union whose members' memos a table's
// memo holds: the members of a larger union (TFLite's builtin options) are
// verified with memos of their own, made at each call.
const maxEmbedMembers = 16

// embedded returns the table types whose memos the memo of tb holds, in
// field order (children), but none that can reach tb: a memo cannot hold
// itself.
func (s *schema) embedded(tb *table) []string {
	var out []string
	for _, c := range s.children(tb) {
		if !slices.Contains(out, c) && !s.reaches(c, tb.name, map[string]bool{}) {
			out = append(out, c)
		}
	}
	return out
}

// children returns the types of tb's table fields, the elements of its
// vectors of tables and its union members, whose memos its memo may hold.
func (s *schema) children(tb *table) []string {
	var out []string
	for _, f := range tb.fields {
		switch {
		case f.depr:
		case s.byName[f.typ] != nil:
			if !bare(s.byName[f.typ]) {
				out = append(out, f.typ)
			}
		case f.vector:
		case s.unions[f.typ] != nil && len(s.unions[f.typ]) <= maxEmbedMembers:
			for _, m := range s.unions[f.typ] {
				if t := s.byName[m.name]; t != nil && !bare(t) {
					out = append(out, m.name)
				}
			}
		}
	}
	return out
}

// reaches reports whether the memo of table type from could hold one of
// type to, directly or through the memos it holds.
func (s *schema) reaches(from, to string, seen map[string]bool) bool {
	if from == to {
		return true
	}
	if seen[from] {
		return false
	}
	seen[from] = true
	for _, c := range s.children(s.byName[from]) {
		if s.reaches(c, to, seen) {
			return true
		}
	}
	return false
}

// call returns the call that verifies the table of type typ at pos, with
// the memo at memo ("" for none: a memo of its own).
func (s *schema) call(typ, memo, pos string) string {
	if bare(s.byName[typ]) || memo == "" {
		return "Verify" + typ + "(w, " + pos + ")"
	}
	return "verify" + typ + "(w, " + pos + ", " + memo + ")"
}

// gen writes Verify<X> and verify<X>, which keeps a memo of the vtable a
// table of its type last had (fbverify.Memo) in its caller's memo
// (embedded), or in Verify<X> or a vector's loop. On a memo hit it reads
// its offset fields' table offsets from the memo and checks no scalar
// field; otherwise it reads the vtable and checks every scalar field,
// reporting the first that fails in id order.
func (s *schema) gen(b *bytes.Buffer, tb *table) error {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("// Verify%s verifies the %s table at pos and everything it refers to.\n", tb.name, tb.name)
	p("func Verify%s(w *fbverify.Walk, pos int64) error {\n", tb.name)
	if bare(tb) {
		p("return w.Bare(pos)\n}\n\n")
		return nil
	}
	p("var m memo%s\nreturn verify%s(w, pos, &m)\n}\n\n", tb.name, tb.name)

	// The fields' ids (a union takes two), the scalar fields and the
	// slots of the offset fields and unions (the memo keeps those).
	type sfield struct {
		f   field
		typ string // "string", "vector", "table", "union", or "scalar"
		sz  int
	}
	var fields []sfield
	var slots []int
	has8, scalars := false, false
	for _, f := range tb.fields {
		if f.depr {
			continue
		}
		sf := sfield{f: f}
		switch {
		case f.vector:
			sf.typ = "vector"
		case f.typ == "string":
			sf.typ = "string"
		case s.byName[f.typ] != nil:
			sf.typ = "table"
		case s.unions[f.typ] != nil:
			sf.typ = "union"
		default:
			sf.typ, sf.sz = "scalar", s.size(f.typ)
			if sf.sz == 0 {
				return fmt.Errorf("field %s: unknown type %s", f.name, f.typ)
			}
			scalars = true
			has8 = has8 || sf.sz == 8
		}
		switch sf.typ {
		case "scalar":
		case "union":
			slots = append(slots, f.id, f.id+1)
		default:
			slots = append(slots, f.id)
		}
		fields = append(fields, sf)
	}
	emb := s.embedded(tb)
	memoOf := func(typ string) string {
		if slices.Contains(emb, typ) {
			return "&m.m" + typ
		}
		return ""
	}

	p("// memo%s is what verify%s keeps from one %s table to the next: the\n// vtable, the table offsets of its offset fields and unions, and the memos\n// of the tables it verifies in place.\n", tb.name, tb.name, tb.name)
	p("type memo%s struct {\nfbverify.Memo\n", tb.name)
	for _, id := range slots {
		p("s%d uint16\n", id)
	}
	for _, c := range emb {
		p("m%s memo%s\n", c, c)
	}
	p("}\n\n")

	// refs writes the checks of the offset fields and unions, in field
	// order, with the table offset of field id given by fo(id); before
	// each, the error of a scalar field that comes before it and failed.
	refs := func(fo func(int) string) error {
		scalarSeen := false
		for _, sf := range fields {
			f, fid := sf.f, sf.f.id
			if sf.typ == "scalar" {
				scalarSeen = true
				continue
			}
			if scalarSeen {
				p("if bad < %d {\nreturn w.ScalarError(&t, bad, %sDesc)\n}\n", fid, tb.name)
			}
			if sf.typ == "union" {
				ms := s.unions[f.typ]
				for _, m := range ms {
					if s.byName[m.name] == nil {
						return fmt.Errorf("union %s: member %s is not a table", f.typ, m.name)
					}
				}
				switch {
				case f.open && f.opaque:
					return fmt.Errorf("field %s: (open) and (opaque) exclude each other", f.name)
				case explicit(ms) && !f.open && !f.opaque:
					return fmt.Errorf("field %s: union %s has explicit tags: want the field (open) or (opaque)", f.name, f.typ)
				}
				// UnionField's steps, with a direct call per member and
				// the common case inline (Walk.UnionHit). (A tag without
				// a value, which only fbverify.Options.CxxRules accepts,
				// has nothing to verify.)
				p("{\ntag, q, ok := w.UnionHit(&t, %s, %[2]s)\nif !ok {\ntag, q, err = w.UnionAt(&t, %[1]s, %[2]s)\n}\nif err != nil {\nreturn w.At(err, %[3]q, -1)\n} else if tag != 0 && q != 0 {\nswitch tag {\n", fo(fid), fo(fid+1), f.name)
				for _, m := range ms {
					p("case %d:\nerr = %s\n", m.tag, s.call(m.name, memoOf(m.name), "q"))
				}
				switch {
				case f.opaque:
					// a tag the schema leaves out: only its offset,
					// which Union checked, is the verifier's business
				case f.open:
					p("default:\nerr = w.Bare(q)\n")
				default:
					p("default:\nerr = w.UnknownTag(&t, %d, tag, %d)\n", fid, len(ms)+1)
				}
				p("}\nif err != nil {\nreturn w.At(err, %q, -1)\n}\n}", f.name)
				if f.required {
					p(" else {\nreturn w.At(w.Missing(&t), %q, -1)\n}\n", f.name)
				} else {
					p("\n")
				}
				p("}\n")
				continue
			}
			// Offset fields: Ref's common case inline (Walk.RefAt), Ref
			// for any other (an error); so for vectors (Walk.VectorAt,
			// Walk.Vector).
			p("if fo := %s; fo != 0 {\nq, ok := w.RefAt(&t, fo)\nif !ok {\nif q, err = w.Ref(&t, %d, %v); err != nil {\nreturn w.At(err, %q, -1)\n}\n}\n", fo(fid), fid, f.required, f.name)
			switch {
			case f.vector && (f.typ == "string" || s.byName[f.typ] != nil):
				p("start, n, ok := w.VectorAt(q, 4)\nif !ok {\nif start, n, err = w.Vector(q, 4); err != nil {\nreturn w.At(err, %q, -1)\n}\n}\n", f.name)
				if f.lazy {
					p("if !w.Lazy() {\n")
				} else {
					p("{\n")
				}
				call := "w.String(e)"
				if f.typ != "string" {
					memo := memoOf(f.typ)
					if memo == "" && !bare(s.byName[f.typ]) {
						p("var me memo%s\n", f.typ)
						memo = "&me"
					}
					call = s.call(f.typ, memo, "e")
				}
				cond := "err == nil"
				if f.typ == "string" {
					cond += " && !w.StringAt(e)" // String's common case inline
				}
				p("for i := int64(0); i < n; i++ {\nvar err error\ne, ok := w.DerefAt(start + 4*i)\nif !ok {\ne, err = w.Deref(start + 4*i)\n}\nif %s {\nerr = %s\n}\n", cond, call)
				p("if err != nil {\nreturn w.At(w.At(err, \"\", int(i)), %q, -1)\n}\n}\n}\n", f.name)
			case f.vector:
				sz := s.size(f.typ)
				if sz == 0 {
					return fmt.Errorf("field %s: vector of %s", f.name, f.typ)
				}
				p("if _, _, ok := w.VectorAt(q, %d); !ok {\nif _, _, err := w.Vector(q, %d); err != nil {\nreturn w.At(err, %q, -1)\n}\n}\n", sz, sz, f.name)
			case f.typ == "string":
				p("if !w.StringAt(q) {\nif err := w.String(q); err != nil {\nreturn w.At(err, %q, -1)\n}\n}\n", f.name)
			default:
				if f.lazy {
					// A lazy walk checks only the offset (Ref did): the
					// caller verifies the table later (Walk.Elem at the
					// field's position).
					p("if !w.Lazy() {\n")
				} else {
					p("{\n")
				}
				p("if err := %s; err != nil {\nreturn w.At(err, %q, -1)\n}\n}\n", s.call(f.typ, memoOf(f.typ), "q"), f.name)
			}
			p("}")
			if f.required {
				p(" else {\nreturn w.At(w.Missing(&t), %q, -1)\n}\n", f.name)
			} else {
				p("\n")
			}
		}
		return nil
	}
	p("func verify%s(w *fbverify.Walk, pos int64, m *memo%s) error {\n", tb.name, tb.name)
	p("t, hit := w.MemoHit(pos, &m.Memo)\nvar err error\nif !hit {\nif t, err = w.Start(pos); err != nil {\nreturn err\n}\n}\n")
	fo := func(id int) string { return "fo" + strconv.Itoa(id) }
	if len(slots) > 0 {
		var names []string
		for _, id := range slots {
			names = append(names, fo(id))
		}
		p("var %s int64\n", strings.Join(names, ", "))
	}
	if scalars {
		p("bad := fbverify.NoField // the first scalar field that fails its checks\n")
	}
	if len(slots) > 0 {
		p("if hit {\n")
		for _, id := range slots {
			p("%s = int64(m.s%d)\n", fo(id), id)
		}
		p("} else {\n")
	} else {
		p("if !hit {\n")
	}
	learn8 := "false"
	if scalars {
		if has8 {
			p("ext, has8 := int64(4), false\n")
			learn8 = "has8"
		} else {
			p("ext := int64(4)\n")
		}
		for _, sf := range fields {
			if sf.typ != "scalar" {
				continue
			}
			p("if fo := w.Slot(&t, %d); fo != 0 {\n", sf.f.id)
			if sf.sz == 8 {
				p("has8 = true\n")
			}
			p("ext = max(ext, fo+%d)\nif !w.ScalarIn(&t, fo, %d) && bad == fbverify.NoField {\nbad = %d\n}\n}\n", sf.sz, sf.sz, sf.f.id)
		}
	}
	for _, id := range slots {
		p("%s = w.Slot(&t, %d)\n", fo(id), id)
	}
	ext := "4"
	if scalars {
		ext = "ext"
		p("if bad == fbverify.NoField {\n")
	}
	p("w.Learn(&t, &m.Memo, %s, %s)\n", ext, learn8)
	for _, id := range slots {
		p("m.s%d = uint16(%s)\n", id, fo(id))
	}
	if scalars {
		p("}\n")
	}
	p("}\n")
	if err := refs(fo); err != nil {
		return err
	}
	if scalars {
		p("if bad != fbverify.NoField {\nreturn w.ScalarError(&t, bad, %sDesc)\n}\n", tb.name)
	}
	if tb.visit {
		p("if w.Visiting() {\nw.Visit(Visit%s, &t)\n}\n", tb.name)
	}
	p("w.Leave()\nreturn nil\n}\n\n")
	return nil
}
