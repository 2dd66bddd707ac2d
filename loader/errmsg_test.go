package loader_test

import (
	"encoding/binary"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/hostile/ptdcheck"
	"github.com/edgeload/edgeload/internal/testkit/hostile/ptecheck"
	"github.com/edgeload/edgeload/internal/testkit/hostile/rtencheck"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
)

// brokenFile is one broken file of a representative set: one per check a
// loader makes, of each format.
type brokenFile struct {
	check string
	data  []byte
}

// expectation matches the words by which an error says what was expected.
var expectation = regexp.MustCompile(`\b(want|wants|expected|must|at least|at most|known|limit|only)\b`)

// brokenFiles builds the representative set from writer files, with the
// writer's knobs or one patched field each.
func brokenFiles(t *testing.T) []brokenFile {
	t.Helper()
	gen := func(f func() ([]hostile.Seed, error), name string) []byte {
		seeds, err := f()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range seeds {
			if s.Name == name {
				return append([]byte(nil), s.Data...)
			}
		}
		t.Fatalf("no generated %s", name)
		return nil
	}
	pteFile := func() []byte { return gen(ptecheck.Generated, "rich.pte") }
	ptdFile := func() []byte { return gen(ptdcheck.Generated, "mixed.ptd") }
	rtenFile := func() []byte { return gen(rtencheck.Generated, "simple-v2.rten") }
	build := func(b []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	patch := func(b []byte, f func(fb hostile.FB)) []byte { f(hostile.FB{B: b}); return b }
	le := binary.LittleEndian
	// pte field ids: Program.execution_plan 1, .segments 4; plan.values 2;
	// EValue.val 1 (tag 0); Tensor.scalar_type 0, .sizes 2, .data_buffer_idx 5
	pteTensor := func(fb hostile.FB) int {
		return fb.Table(fb.Path([2]int{1, 0}, [2]int{2, 0}), 1)
	}
	rtenB := func(f func(fb hostile.FB)) []byte { b := rtenFile(); f(hostile.FB{B: b[32:]}); return b }
	rtenConst := func(fb hostile.FB) int { return fb.Table(fb.Path([2]int{1, -1}, [2]int{0, 1}), 2) }

	return []brokenFile{
		// pte
		{"pte: identifier of a later version", build((&writer.PTE{Identifier: "ET13", Methods: []writer.PTEMethod{{Name: "m"}}}).Bytes())},
		{"pte: extended header too short", patch(pteFile(), func(fb hostile.FB) { fb.PutU32(12, 16) })},
		{"pte: truncated download (program_size)", patch(pteFile(), func(fb hostile.FB) { fb.PutU64(16, 1<<20) })},
		{"pte: truncated download (segment data)", func() []byte { b := pteFile(); return b[:len(b)-1] }()},
		{"pte: segments overlap the program", patch(pteFile(), func(fb hostile.FB) { fb.PutU64(24, 64) })},
		{"pte: Program.version", build((&writer.PTE{Version: 7, Methods: []writer.PTEMethod{{Name: "m"}}}).Bytes())},
		{"pte: vector longer than the buffer", patch(pteFile(), func(fb hostile.FB) { p, _ := fb.Vector(fb.Root(), 1); fb.PutU32(p, 1<<31) })},
		{"pte: unknown union tag", patch(pteFile(), func(fb hostile.FB) { fb.PutU8(fb.MustField(fb.Path([2]int{1, 0}, [2]int{2, 0}), 0), 200) })},
		{"pte: reserved scalar type", patch(pteFile(), func(fb hostile.FB) { fb.PutU8(fb.MustField(pteTensor(fb), 0), 9) })},
		{"pte: negative size", patch(pteFile(), func(fb hostile.FB) { p, _ := fb.Vector(pteTensor(fb), 2); fb.PutU32(p+4, 1<<32-1) })},
		{"pte: data_buffer_idx out of range", patch(pteFile(), func(fb hostile.FB) { fb.PutU32(fb.MustField(pteTensor(fb), 5), 99) })},
		{"pte: segment past the segment data", patch(pteFile(), func(fb hostile.FB) { fb.PutU64(fb.MustField(fb.Path([2]int{4, 1}), 1), 1<<20) })},
		{"pte: string without terminator", patch(pteFile(), func(fb hostile.FB) {
			s := fb.Table(fb.Path([2]int{1, 0}), 0)
			fb.PutU8(s+4+int(le.Uint32(fb.B[s:])), 'x')
		})},
		// ptd
		{"ptd: header magic", build((&writer.PTD{HeaderMagic: "FH02"}).Bytes())},
		{"ptd: header length below 40", patch(ptdFile(), func(fb hostile.FB) { fb.PutU32(12, 24) })},
		{"ptd: truncated download", func() []byte { b := ptdFile(); return b[:len(b)-1] }()},
		{"ptd: flatbuffer size over the limit", patch(ptdFile(), func(fb hostile.FB) { fb.PutU64(24, 1<<40) })},
		{"ptd: FlatTensor.version", build((&writer.PTD{Version: 3}).Bytes())},
		{"ptd: key listed twice", build((&writer.PTD{Entries: []writer.PTDEntry{{Key: "k", Data: []byte{1}}, {Key: "k", Data: []byte{2}}}}).Bytes())},
		{"ptd: layout larger than its segment", build((&writer.PTD{Entries: []writer.PTDEntry{
			{Key: "w", Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{4}}, Size: 8}}}).Bytes())},
		{"ptd: reserved scalar type", build((&writer.PTD{Entries: []writer.PTDEntry{
			{Key: "w", Layout: &writer.PTDLayout{ScalarType: 9, Sizes: []int32{1}}, Size: 8}}}).Bytes())},
		{"ptd: segment_index out of range", build((&writer.PTD{Entries: []writer.PTDEntry{{Key: "w", SegmentRef: 5}}}).Bytes())},
		// rten
		{"rten: header version", build(func() ([]byte, error) {
			b, _, err := (&writer.RTen{HeaderVersion: 3, Graph: writer.RTenGraph{}}).Bytes()
			return b, err
		}())},
		{"rten: model data overlapping the header", func() []byte { b := rtenFile(); le.PutUint64(b[8:], 16); return b }()},
		{"rten: truncated download", func() []byte { b := rtenFile(); return b[:len(b)-40] }()},
		{"rten: schema_version", build(func() ([]byte, error) { b, _, err := (&writer.RTen{SchemaVersion: 2}).Bytes(); return b, err }())},
		{"rten: unknown constant dtype", rtenB(func(fb hostile.FB) { fb.PutU16(fb.MustField(rtenConst(fb), 3), 77) })},
		{"rten: data_offset past the tensor data", rtenB(func(fb hostile.FB) { fb.PutU64(fb.MustField(rtenConst(fb), 4), 1<<20) })},
		{"rten: graph input out of range", rtenB(func(fb hostile.FB) { p, _ := fb.Vector(fb.Table(fb.Root(), 1), 1); fb.PutU32(p+4, 99) })},
		{"rten: shape overflow", rtenB(func(fb hostile.FB) {
			p, n := fb.Vector(rtenConst(fb), 0)
			for i := 0; i < n; i++ {
				fb.PutU32(p+4+4*i, 1<<32-1)
			}
		})},
	}
}

// TestErrorMessages collects the error of each broken file of a
// representative set (one per check) and asserts that it is useful to a
// person: it names the format, the field (a header field or table path),
// the file offset, and what was expected. Run with -v to read them
// (docs/SAFETY.md quotes some).
func TestErrorMessages(t *testing.T) {
	for _, c := range brokenFiles(t) {
		m, err := loader.New(mmapfile.NewBytes(c.data))
		if err == nil {
			m.Close()
			t.Errorf("%s: opened", c.check)
			continue
		}
		msg := err.Error()
		t.Logf("%-42s %s", c.check+":", msg)
		var fe *format.FormatError
		if !errors.As(err, &fe) {
			t.Errorf("%s: %q is not a *FormatError", c.check, msg)
			continue
		}
		want := c.check[:strings.Index(c.check, ":")]
		switch {
		case fe.Format != want || !strings.HasPrefix(msg, want+": "):
			t.Errorf("%s: %q does not start with the format %q", c.check, msg, want)
		case fe.Field == "":
			t.Errorf("%s: %q names no field", c.check, msg)
		case fe.Offset < 0 || !strings.Contains(msg, "at offset 0x"):
			t.Errorf("%s: %q names no offset", c.check, msg)
		case !expectation.MatchString(fe.Msg):
			t.Errorf("%s: %q does not say what was expected (want one of %v)", c.check, msg, expectation)
		}
	}
}

// TestErrorMessageUnknownFormat: bytes of no format name what each format
// was expected to start with, and what the file holds instead.
func TestErrorMessageUnknownFormat(t *testing.T) {
	b, err := (&writer.PTE{Identifier: "QQ08", Methods: []writer.PTEMethod{{Name: "m"}}}).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	_, err = loader.New(mmapfile.NewBytes(b))
	t.Log(err)
	if !errors.Is(err, loader.ErrUnknownFormat) || !strings.Contains(err.Error(), `QQ08"`) || !strings.Contains(err.Error(), `"ET.." at offset 4`) {
		t.Errorf("unknown format: %v", err)
	}
	// A program under a bundle's identifier is read as a bundle, and its
	// error says what the bundle lacks.
	copy(b[4:8], "BP08")
	_, err = loader.New(mmapfile.NewBytes(b))
	var fe *loader.FormatError
	if !errors.As(err, &fe) || fe.Format != "bpte" || !strings.Contains(err.Error(), "BundledProgram.program") {
		t.Errorf("a program labelled BP08: %v", err)
	}
}
