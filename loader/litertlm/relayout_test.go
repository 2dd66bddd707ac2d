package litertlm_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/litertlmfb"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/litertlm"
	"github.com/edgeload/edgeload/mmapfile"
)

// makeContainer writes a .litertlm as the LiteRT-LM writer lays it out: the
// header, the metadata FlatBuffer, each section on 16 KiB.
func makeContainer(t *testing.T, types []litertlmfb.AnySectionDataType, data [][]byte) []byte {
	t.Helper()
	// The offsets depend on the FlatBuffer's size only through the first
	// section's place: fixed at 16 KiB, which the header must not reach.
	var begin, end []uint64
	at := uint64(litertlm.SectionAlign)
	for _, d := range data {
		begin, end = append(begin, at), append(end, at+uint64(len(d)))
		at = (at + uint64(len(d)) + litertlm.SectionAlign - 1) &^ (litertlm.SectionAlign - 1)
	}
	b := flatbuffers.NewBuilder(0)
	objs := make([]flatbuffers.UOffsetT, len(data))
	for i := range data {
		litertlmfb.SectionObjectStart(b)
		litertlmfb.SectionObjectAddBeginOffset(b, begin[i])
		litertlmfb.SectionObjectAddEndOffset(b, end[i])
		litertlmfb.SectionObjectAddDataType(b, types[i])
		objs[i] = litertlmfb.SectionObjectEnd(b)
	}
	litertlmfb.SectionMetadataStartObjectsVector(b, len(objs))
	for i := len(objs) - 1; i >= 0; i-- {
		b.PrependUOffsetT(objs[i])
	}
	vec := b.EndVector(len(objs))
	litertlmfb.SectionMetadataStart(b)
	litertlmfb.SectionMetadataAddObjects(b, vec)
	sm := litertlmfb.SectionMetadataEnd(b)
	litertlmfb.LiteRTLMMetaDataStart(b)
	litertlmfb.LiteRTLMMetaDataAddSectionMetadata(b, sm)
	b.Finish(litertlmfb.LiteRTLMMetaDataEnd(b))
	fb := b.FinishedBytes()
	out := make([]byte, end[len(end)-1])
	copy(out, litertlm.Magic)
	binary.LittleEndian.PutUint32(out[8:], 1)
	binary.LittleEndian.PutUint64(out[24:], uint64(32+len(fb)))
	copy(out[32:], fb)
	for i, d := range data {
		copy(out[begin[i]:], d)
	}
	return out
}

// write lays l out as package repack does.
func write(t *testing.T, l *format.Layout) []byte {
	t.Helper()
	out := make([]byte, l.Size)
	copy(out, l.Head)
	end := int64(len(l.Head))
	for _, p := range l.Pieces {
		if p.Offset < end || p.Offset+p.Data.Len() > l.Size {
			t.Fatalf("piece at %d (+%d) overlaps what precedes it (ends at %d) or runs past %d", p.Offset, p.Data.Len(), end, l.Size)
		}
		b, err := p.Data.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		copy(out[p.Offset:], b)
		end = p.Offset + p.Data.Len()
	}
	return out
}

// sums lists a container's tensors and named data by name and bytes.
func sums(t *testing.T, m *litertlm.Model) []string {
	t.Helper()
	var out []string
	for i := range m.NumTensors() {
		b, err := m.TensorData(i).Bytes()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("tensor %s %x", m.TensorAt(i).Name, sha256.Sum256(b)))
	}
	for _, nd := range m.NamedData() {
		b, err := nd.Data.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("named %s %x", nd.Key, sha256.Sum256(b)))
	}
	return out
}

// sectionsScript prints each section of a .litertlm as "TYPE BEGIN END",
// read with the flatbuffers module's plain Table, not edgeload's reader:
// LiteRTLMMetaData field 1 (section_metadata), its field 0 (objects), each
// object's fields 1, 2, 3 (begin_offset, end_offset, data_type).
const sectionsScript = `
import sys, struct, flatbuffers
from flatbuffers.table import Table
b = open(sys.argv[1], "rb").read()
end = struct.unpack_from("<Q", b, 24)[0]
fb = bytearray(b[32:end])
root = Table(fb, struct.unpack_from("<I", fb, 0)[0])
def field(t, i): return t.Offset(4 + 2 * i)
def table(t, i): return Table(fb, t.Indirect(t.Pos + field(t, i)))
secs = table(root, 1)
o = field(secs, 0)
vec = secs.Vector(o)
for k in range(secs.VectorLen(o)):
    s = Table(fb, secs.Indirect(vec + 4 * k))
    get = lambda i, fl: s.Get(fl, s.Pos + field(s, i)) if field(s, i) else 0
    print(get(3, flatbuffers.number_types.Uint8Flags), get(1, flatbuffers.number_types.Uint64Flags), get(2, flatbuffers.number_types.Uint64Flags))
`

// TestRelayout relays out the container Google's builder wrote (a TFLite
// section, a tokenizer, binary data), the real tokenizer-only file, and
// one made here of real TFLite models that LiteRT runs and a tokenizer:
// the copy opens with the same tensors and named data; Python's flatbuffers
// module reads every section of the copy on the boundary (and 16 KiB),
// each holding the bytes of the original's section but for the TFLite
// one, whose tensors lie on the boundary; and, where the LiteRT
// interpreter is installed, the copy's TFLite section runs to the same
// outputs as the original's.
func TestRelayout(t *testing.T) {
	files := map[string][]byte{}
	for _, p := range append([]string{filepath.Join("testdata", "builder.litertlm")}, testmodels.Files(t, "litertlm")...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(p)] = b
	}
	var data [][]byte
	for _, name := range []string{"tflite/support-mobilenet-v1-quant-metadata.tflite", "tflite/litert-group-norm-offset.tflite"} {
		b, err := os.ReadFile(testmodels.Path(t, name))
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, b)
	}
	data = append(data, []byte("tokenizer bytes"))
	files["made.litertlm"] = makeContainer(t, []litertlmfb.AnySectionDataType{litertlmfb.AnySectionDataTypeTFLiteModel, litertlmfb.AnySectionDataTypeTFLiteModel, litertlmfb.AnySectionDataTypeSP_Tokenizer}, data)
	var pairs []string
	dir := t.TempDir() // the pairs outlive the subtests
	for name, orig := range files {
		for _, align := range []int64{4096, 65536} {
			t.Run(fmt.Sprintf("%s/%d", name, align), func(t *testing.T) {
				m, err := litertlm.NewFile(mmapfile.NewBytes(orig))
				if err != nil {
					t.Fatal(err)
				}
				l, err := m.Relayout(format.RelayoutOptions{Align: align})
				if err != nil {
					t.Fatal(err)
				}
				out := write(t, l)
				c, err := litertlm.NewFile(mmapfile.NewBytes(out))
				if err != nil {
					t.Fatalf("the copy does not open: %v", err)
				}
				if got, want := sums(t, c), sums(t, m); strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("the copy holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				for i := range c.NumTensors() {
					if d := c.TensorData(i); d.Len() > 0 && d.Offset()%align != 0 {
						t.Errorf("tensor %s at %d", c.TensorAt(i).Name, d.Offset())
					}
				}
				sub := filepath.Join(dir, fmt.Sprintf("%s-%d", name, align))
				if err := os.Mkdir(sub, 0o755); err != nil {
					t.Fatal(err)
				}
				pairs = append(pairs, checkSections(t, sub, orig, out, max(align, litertlm.SectionAlign))...)
			})
		}
	}
	if err := exec.Command("python3", "-c", "import ai_edge_litert.interpreter").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("ai_edge_litert is required under CI=true: %v", err)
		}
		t.Skipf("ai_edge_litert not available: the TFLite sections are not run")
	}
	res, err := exec.Command("python3", append([]string{filepath.Join("..", "tflite", "testdata", "litert_check.py")}, pairs...)...).CombinedOutput()
	t.Logf("%s", res)
	if err != nil || strings.Count(string(res), "same ") < 4 {
		t.Errorf("LiteRT on the TFLite sections: %v, want the outputs of at least 4 sections the same", err)
	}
}

// checkSections reads the sections of orig and out with Python's
// flatbuffers module and checks out's: on the boundary, with orig's bytes.
// It returns the TFLite sections (type 3) of both written to files in dir,
// in pairs, for LiteRT to run.
func checkSections(t *testing.T, dir string, orig, out []byte, align int64) []string {
	t.Helper()
	if err := exec.Command("python3", "-c", "import flatbuffers").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 with flatbuffers is required under CI=true: %v", err)
		}
		t.Skipf("python3 with flatbuffers not available: %v", err)
	}
	read := func(name string, b []byte) (string, [][3]int64) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := exec.Command("python3", "-c", sectionsScript, p).CombinedOutput()
		if err != nil {
			t.Fatalf("reading %s's sections: %v: %s", name, err, got)
		}
		var secs [][3]int64
		for _, line := range strings.Split(strings.TrimSpace(string(got)), "\n") {
			var s [3]int64
			if _, err := fmt.Sscan(line, &s[0], &s[1], &s[2]); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			secs = append(secs, s)
		}
		return p, secs
	}
	_, want := read("orig.litertlm", orig)
	_, got := read("copy.litertlm", out)
	if len(got) != len(want) {
		t.Fatalf("%d sections, want %d", len(got), len(want))
	}
	var pairs []string
	for i, s := range got {
		w := want[i]
		if s[0] != w[0] || s[1]%align != 0 || s[2] > int64(len(out)) || s[1] > s[2] {
			t.Errorf("section %d: type %d [%d, %d), want type %d on %d", i, s[0], s[1], s[2], w[0], align)
			continue
		}
		a, b := orig[w[1]:w[2]], out[s[1]:s[2]]
		if s[0] != 3 {
			if !bytes.Equal(a, b) {
				t.Errorf("section %d (type %d) differs", i, s[0])
			}
			continue
		}
		pa, pb := filepath.Join(dir, fmt.Sprintf("%d-orig.tflite", i)), filepath.Join(dir, fmt.Sprintf("%d-copy.tflite", i))
		if os.WriteFile(pa, a, 0o644) != nil || os.WriteFile(pb, b, 0o644) != nil {
			t.Fatal("writing the sections")
		}
		pairs = append(pairs, pa, pb)
	}
	return pairs
}
