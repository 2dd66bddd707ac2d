package safetensors_test

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/safetensors"
	"github.com/edgeload/edgeload/mmapfile"
)

// mk builds a file from a header text and a data buffer.
func mk(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

func open(b []byte) (*safetensors.File, error) {
	return safetensors.NewFile(mmapfile.NewBytes(b))
}

const (
	okEntry = `"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}`
	ok2     = `{` + okEntry + `}`
	entryA  = `{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`
)

// TestRules runs each header rule of the format (the R-numbers of
// FORMATS-safetensors-ptn.md §3) on a file that breaks it and on one that
// just keeps it.
func TestRules(t *testing.T) {
	for _, c := range ruleCases() {
		f, err := open(c.file)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: refused: %v", c.name, err)
			}
			continue
		}
		var fe *format.FormatError
		if err == nil || !errors.Is(err, c.want) || !errors.As(err, &fe) || fe.Format != "safetensors" || fe.Offset < 0 {
			t.Errorf("%s: err %v (file %v); want a safetensors FormatError with an offset wrapping %v", c.name, err, f != nil, c.want)
			continue
		}
		t.Logf("%s: %v", c.name, err)
	}
}

// TestRulesPython runs the rule cases through the upstream reader (the
// Rust crate, through its Python package): it must accept exactly the
// files NewFile accepts, except a repeated tensor name or metadata key,
// of which it keeps the last and NewFile refuses. (A repeated member of an
// entry, or a repeated __metadata__, it refuses as NewFile does.)
func TestRulesPython(t *testing.T) {
	py := pythonWith(t, "safetensors")
	dir := t.TempDir()
	cases := ruleCases()
	var paths []string
	for i, c := range cases {
		p := filepath.Join(dir, strconv.Itoa(i)+".safetensors")
		if err := os.WriteFile(p, c.file, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	script := `
import sys
from safetensors import deserialize
for p in sys.argv[1:]:
    try:
        deserialize(open(p, "rb").read())
        print("ok")
    except Exception as e:
        print("refused", str(e).replace("\n", " ")[:200])
`
	out, err := exec.Command(py, append([]string{"-c", script}, paths...)...).Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("python answered %d lines for %d cases", len(lines), len(cases))
	}
	for i, c := range cases {
		upstream := lines[i] == "ok"
		ours := c.want == nil
		if c.name == "R7 duplicate name" || c.name == "R7 duplicate metadata key" {
			if ours || !upstream {
				t.Errorf("%s: upstream %s, ours accepted %v; want upstream ok and ours refused", c.name, lines[i], ours)
			}
			continue
		}
		if upstream != ours {
			t.Errorf("%s: upstream %q, ours accepted %v", c.name, lines[i], ours)
		}
	}
}

type ruleCase struct {
	name string
	file []byte
	want error // nil: accepted
}

func ruleCases() []ruleCase {
	two := []byte{1, 2}
	nested := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	return []ruleCase{
		{"R1 short", []byte{1, 0, 0}, format.ErrTruncated},
		{"R2 too large", binary.LittleEndian.AppendUint64(nil, 100_000_001), format.ErrMalformed},
		{"R3 past the end", append(binary.LittleEndian.AppendUint64(nil, 1000), "{}"...), format.ErrTruncated},
		{"R4 invalid UTF-8 name", mk("{\"\xff\":"+entryA, two), format.ErrMalformed},
		{"R4 surrogate as UTF-8", mk("{\"\xed\xa0\x80\":"+entryA, two), format.ErrMalformed},
		{"R4 overlong UTF-8", mk("{\"__metadata__\":{\"k\":\"\xc0\xaf\"},"+okEntry+"}", two), format.ErrMalformed},
		{"R4 UTF-8 name", mk(`{"é✓":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, two), nil},
		{"R5 leading and trailing whitespace", mk(" \t\r\n"+ok2+"  \n\t", two), nil},
		{"R5 NUL padding", mk(ok2+"\x00\x00", two), format.ErrMalformed},
		{"R5 trailing data", mk(ok2+"x", two), format.ErrMalformed},
		{"R5 two values", mk(ok2+"{}", two), format.ErrMalformed},
		{"R5 NaN", mk(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"x":NaN}}`, two), format.ErrMalformed},
		{"R5 lone surrogate", mk(`{"\ud800":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, two), format.ErrMalformed},
		{"R5 lone low surrogate", mk(`{"\udc00x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, two), format.ErrMalformed},
		{"R5 surrogate pair", mk(`{"\ud83d\ude00":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, two), nil},
		{"R5 control character", mk("{\"a\tb\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", two), format.ErrMalformed},
		{"R5 unterminated", mk(`{"a`, nil), format.ErrMalformed},
		{"R6 array", mk(`[]`, nil), format.ErrMalformed},
		{"R6 empty object", mk(`{}`, nil), nil},
		{"R7 duplicate name", mk(`{`+okEntry+`,`+okEntry+`}`, two), format.ErrMalformed},
		{"R7 duplicate metadata", mk(`{"__metadata__":{},"__metadata__":{}}`, nil), format.ErrMalformed},
		{"R7 duplicate metadata key", mk(`{"__metadata__":{"k":"1","k":"2"}}`, nil), format.ErrMalformed},
		{"R7 duplicate member", mk(`{"a":{"dtype":"U8","dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, two), format.ErrMalformed},
		{"R8 metadata null", mk(`{"__metadata__":null,`+okEntry+`}`, two), nil},
		{"R8 metadata number", mk(`{"__metadata__":{"k":1}}`, nil), format.ErrMalformed},
		{"R8 metadata array", mk(`{"__metadata__":[]}`, nil), format.ErrMalformed},
		{"R9 missing dtype", mk(`{"a":{"shape":[2],"data_offsets":[0,2]}}`, two), format.ErrMalformed},
		{"R9 missing shape", mk(`{"a":{"dtype":"U8","data_offsets":[0,2]}}`, two), format.ErrMalformed},
		{"R9 missing offsets", mk(`{"a":{"dtype":"U8","shape":[2]}}`, two), format.ErrMalformed},
		{"R9 lowercase code", mk(`{"a":{"dtype":"u8","shape":[2],"data_offsets":[0,2]}}`, two), format.ErrMalformed},
		{"R9 unknown code", mk(`{"a":{"dtype":"F128","shape":[2],"data_offsets":[0,2]}}`, two), format.ErrUnsupportedVersion},
		{"R9 negative dim", mk(`{"a":{"dtype":"U8","shape":[-2],"data_offsets":[0,2]}}`, two), format.ErrMalformed},
		{"R9 minus zero", mk(`{"a":{"dtype":"U8","shape":[-0,2],"data_offsets":[0,0]}}`, nil), format.ErrMalformed},
		{"R9 float dim", mk(`{"a":{"dtype":"U8","shape":[2.0],"data_offsets":[0,2]}}`, two), format.ErrMalformed},
		{"R9 exponent dim", mk(`{"a":{"dtype":"U8","shape":[2e0],"data_offsets":[0,2]}}`, two), format.ErrMalformed},
		{"R9 leading zero", mk(`{"a":{"dtype":"U8","shape":[02],"data_offsets":[0,2]}}`, two), format.ErrMalformed},
		{"R9 dim over u64", mk(`{"a":{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,2]}}`, two), format.ErrMalformed},
		{"R9 three offsets", mk(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2,2]}}`, two), format.ErrMalformed},
		{"R9 one offset", mk(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[2]}}`, two), format.ErrMalformed},
		{"R9 entry not an object", mk(`{"a":[1]}`, nil), format.ErrMalformed},
		{"R9 unknown members", mk(`{"a":{"x":{"y":[1,-2.5e+3,true,null,"s"]},"dtype":"U8","shape":[2],"data_offsets":[0,2],"z":false}}`, two), nil},
		{"R9 deep unknown member", mk(`{"a":{"x":`+nested(100)+`,"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, two), nil},
		{"R9 too deep", mk(`{"a":{"x":`+nested(200)+`,"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, two), format.ErrMalformed},
		{"R10 gap", mk(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, two), format.ErrMalformed},
		{"R10 overlap", mk(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, two), format.ErrMalformed},
		{"R10 end before begin", mk(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[2,0]}}`, two), format.ErrMalformed},
		{"R10 header order free", mk(`{"b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, two), nil},
		{"R11 overflow", mk(`{"a":{"dtype":"U8","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}}`, nil), format.ErrMalformed},
		{"R11 zero first", mk(`{"a":{"dtype":"U8","shape":[0,4294967296,4294967296],"data_offsets":[0,0]}}`, nil), nil},
		{"R11 bits overflow", mk(`{"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,0]}}`, nil), format.ErrMalformed},
		{"R12 odd F4", mk(`{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}`, two), format.ErrMalformed},
		{"R12 F6 of 2", mk(`{"a":{"dtype":"F6_E2M3","shape":[2],"data_offsets":[0,2]}}`, two), format.ErrMalformed},
		{"R12 F6 of 4", mk(`{"a":{"dtype":"F6_E3M2","shape":[4],"data_offsets":[0,3]}}`, []byte{1, 2, 3}), nil},
		{"R12 F4 of 4", mk(`{"a":{"dtype":"F4","shape":[2,2],"data_offsets":[0,2]}}`, two), nil},
		{"R13 wrong size", mk(`{"a":{"dtype":"U16","shape":[2],"data_offsets":[0,2]}}`, two), format.ErrMalformed},
		{"R14 trailing byte", mk(ok2, []byte{1, 2, 3}), format.ErrMalformed},
		{"R14 short data", mk(ok2, []byte{1}), format.ErrTruncated},
		{"scalar and empty", mk(`{"s":{"dtype":"I64","shape":[],"data_offsets":[0,8]},"e":{"dtype":"F32","shape":[3,0],"data_offsets":[8,8]}}`, make([]byte, 8)), nil},
	}
}

// TestMetadata: absent, null, empty and full __metadata__.
func TestMetadata(t *testing.T) {
	for _, c := range []struct {
		header string
		has    bool
		n      int
	}{
		{`{}`, false, 0},
		{`{"__metadata__":null}`, false, 0},
		{`{"__metadata__":{}}`, true, 0},
		{`{"__metadata__":{"a":"1","b":"\u00e9\n"}}`, true, 2},
	} {
		f, err := open(mk(c.header, nil))
		if err != nil {
			t.Fatalf("%s: %v", c.header, err)
		}
		if f.HasMetadata() != c.has || len(f.Metadata()) != c.n {
			t.Errorf("%s: HasMetadata %v, %d entries", c.header, f.HasMetadata(), len(f.Metadata()))
		}
		if c.n == 2 {
			if v, ok := f.MetadataValue("b"); !ok || v != "é\n" {
				t.Errorf("b = %q, %v", v, ok)
			}
			if _, ok := f.MetadataValue("c"); ok {
				t.Error("c found")
			}
		}
	}
}

// TestUnaligned reads a file laid out as MLX writes it (no header
// padding: every float32 at an odd offset): the typed view copies, says
// so, and has the values.
func TestUnaligned(t *testing.T) {
	h := `{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}}`
	if (8+len(h))%2 == 0 {
		h += " "
	}
	var data []byte
	for _, v := range []float32{1.5, -2, 3.25} {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
	}
	f, err := open(mk(h, data))
	if err != nil {
		t.Fatal(err)
	}
	w := f.TensorAt(0)
	if w.Offset%2 != 1 {
		t.Fatalf("offset %d is not odd", w.Offset)
	}
	v, copied, err := w.Data.Float32()
	if err != nil || !copied || len(v) != 3 || v[0] != 1.5 || v[1] != -2 || v[2] != 3.25 {
		t.Errorf("Float32() = %v, copied %v, %v; want a copy of [1.5 -2 3.25]", v, copied, err)
	}
}

// TestSniff: safetensors files and indexes are recognised, other formats'
// first bytes are not.
func TestSniff(t *testing.T) {
	yes := [][]byte{
		mk(ok2, nil), mk("  \n"+ok2, nil),
		[]byte("{\n  \"metadata\": {\"total_size\": 12},\n  \"weight_map\": {}}"),
		[]byte(`{"weight_map":{}}`),
	}
	no := [][]byte{
		nil, []byte("12345678"), mk("", nil), mk("[]", nil),
		binary.LittleEndian.AppendUint64(nil, 100_000_001),
		append(binary.LittleEndian.AppendUint64(nil, 3), "x{}"...),
		[]byte("\x1c\x00\x00\x00ET12\x00\x00\x00\x00"), []byte("GGUF\x03\x00\x00\x00\x00\x00\x00\x00"),
		[]byte("RTEN\x02\x00\x00\x00{\x00\x00\x00"), []byte(`{"other":1}`),
	}
	for _, b := range yes {
		if !safetensors.Sniff(b) {
			t.Errorf("Sniff(%q) = false", b)
		}
	}
	for _, b := range no {
		if safetensors.Sniff(b) {
			t.Errorf("Sniff(%q) = true", b)
		}
	}
}
