package tflite_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/tflite"
	"github.com/edgeload/edgeload/mmapfile"
)

// write lays l out as package repack does: the head, each piece at its
// offset, zeros between them and up to l.Size.
func write(t *testing.T, l *format.Layout) []byte {
	t.Helper()
	out := make([]byte, l.Size)
	if int64(len(l.Head)) > l.Size {
		t.Fatalf("head of %d bytes past the size %d", len(l.Head), l.Size)
	}
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

// summary is what a relaid model must keep: tensor bytes by name,
// metadata by name, signatures, subgraphs, associated files.
type summary struct {
	Tensors    map[string][32]byte
	Metadata   []string
	Signatures []tflite.SignatureDef
	Subgraphs  []string
	Assoc      []string
	Orders     [][]int
}

func summarize(t *testing.T, m *tflite.Model) summary {
	t.Helper()
	s := summary{Tensors: map[string][32]byte{}}
	for i := range m.NumTensors() {
		b, err := m.TensorData(i).Bytes()
		if err != nil {
			t.Fatal(err)
		}
		s.Tensors[m.TensorAt(i).Name] = sha256.Sum256(b)
	}
	for _, md := range m.Metadata() {
		b, err := md.Data.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		s.Metadata = append(s.Metadata, fmt.Sprintf("%s %d %x", md.Name, md.Buffer, sha256.Sum256(b)))
	}
	s.Signatures = m.SignatureDefs()
	for _, sg := range m.Subgraphs() {
		s.Subgraphs = append(s.Subgraphs, fmt.Sprintf("%s %d tensors %d operators", sg.Name, len(sg.Tensors), sg.NumOperators))
	}
	for _, a := range m.AssociatedFiles() {
		b, err := a.Data.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		s.Assoc = append(s.Assoc, fmt.Sprintf("%s %d %d %x", a.Name, a.Method, a.Size, sha256.Sum256(b)))
	}
	for _, g := range append([]string{""}, m.Groups()...) {
		o, err := m.UseOrder(g)
		if err != nil {
			t.Fatal(err)
		}
		s.Orders = append(s.Orders, o)
	}
	return s
}

// relaid relays the model out with align and checks the copy: it opens,
// every buffer a tensor reads starts on the boundary, and it lists the
// same tensors (by name and bytes), metadata, signatures, subgraphs, use
// orders and associated files.
func relaid(t *testing.T, orig []byte, align int64) []byte {
	t.Helper()
	m, err := tflite.NewFile(mmapfile.NewBytes(orig))
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.Relayout(format.RelayoutOptions{Align: align})
	if err != nil {
		t.Fatal(err)
	}
	out := write(t, l)
	c, err := tflite.NewFile(mmapfile.NewBytes(out))
	if err != nil {
		t.Fatalf("the relaid copy does not open: %v", err)
	}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	for i := range c.NumTensors() {
		tt := c.TensorAt(i)
		if tt.Data.Len() > 0 && tt.Data.Offset()%align != 0 {
			t.Errorf("tensor %q at %d, not on a %d-byte boundary", tt.Name, tt.Data.Offset(), align)
		}
	}
	for _, tt := range c.Tensors() {
		if b := c.Buffers()[tt.Buffer]; b.Kind != tflite.BufferOffset {
			t.Errorf("tensor %q: buffer %d is of kind %d, want an offset buffer", tt.Name, tt.Buffer, b.Kind)
		}
	}
	if got, want := summarize(t, c), summarize(t, m); !reflect.DeepEqual(got, want) {
		t.Errorf("the relaid copy differs:\n got %+v\nwant %+v", got, want)
	}
	// The copy relays out again (its FlatBuffer now ends in the padding
	// before the first buffer, which the new head keeps), to the same model.
	l2, err := c.Relayout(format.RelayoutOptions{Align: align})
	if err != nil {
		t.Fatal(err)
	}
	c2, err := tflite.NewFile(mmapfile.NewBytes(write(t, l2)))
	if err != nil {
		t.Fatalf("the copy of the copy does not open: %v", err)
	}
	if got, want := summarize(t, c2), summarize(t, m); !reflect.DeepEqual(got, want) {
		t.Errorf("the copy of the copy differs:\n got %+v\nwant %+v", got, want)
	}
	return out
}

func TestRelayoutGenerated(t *testing.T) {
	for _, external := range []bool{false, true} {
		for _, align := range []int64{1, 64, 16384} {
			t.Run(fmt.Sprintf("external=%v/align=%d", external, align), func(t *testing.T) {
				relaid(t, tflitegenSample(external), align)
			})
		}
	}
}

func TestRelayoutRejectsAlignment(t *testing.T) {
	m, err := tflite.NewFile(mmapfile.NewBytes(tflitegenSample(false)))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []int64{0, -16, 48, 1 << 31} {
		if _, err := m.Relayout(format.RelayoutOptions{Align: a}); err == nil {
			t.Errorf("Relayout(%d) succeeded, want an error", a)
		}
	}
}

// TestRelayoutRealFiles relays every real file out and checks the copies;
// the zip archive of associated files must still read with Python's
// zipfile where python3 is installed.
func TestRelayoutRealFiles(t *testing.T) {
	for _, path := range testmodels.Files(t, "tflite") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			out := relaid(t, orig, 16384)
			c, err := tflite.NewFile(mmapfile.NewBytes(out))
			if err != nil {
				t.Fatal(err)
			}
			if len(c.AssociatedFiles()) == 0 {
				return
			}
			zr, err := zip.NewReader(bytes.NewReader(out), int64(len(out)))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range zr.File {
				rc, err := f.Open()
				if err != nil {
					t.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, rc); err != nil {
					t.Errorf("%s: %v", f.Name, err)
				}
				rc.Close()
			}
			if _, err := exec.LookPath("python3"); err != nil {
				return
			}
			p := filepath.Join(t.TempDir(), "copy.tflite")
			if err := os.WriteFile(p, out, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("python3", "-c", "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); assert z.testzip() is None; print(' '.join(z.namelist()))", p)
			got, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("Python's zipfile: %v: %s", err, got)
			}
			var names []string
			for _, a := range c.AssociatedFiles() {
				names = append(names, a.Name)
			}
			if strings.TrimSpace(string(got)) != strings.Join(names, " ") {
				t.Errorf("Python's zipfile lists %q, want %q", got, names)
			}
		})
	}
}

// TestRelayoutLiteRT runs the LiteRT interpreter (Python's ai_edge_litert)
// on each real file and its relaid copy with the same random inputs and
// wants bit-identical outputs. It skips without python3 and
// ai_edge_litert, and fails then under CI=true.
func TestRelayoutLiteRT(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	missing := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %s", why)
		}
		t.Skip(why)
	}
	if _, err := exec.LookPath("python3"); err != nil {
		missing("no python3")
	}
	if err := exec.Command("python3", "-c", "import ai_edge_litert.interpreter").Run(); err != nil {
		missing("no ai_edge_litert (pip install ai-edge-litert)")
	}
	dir := t.TempDir()
	args := []string{filepath.Join("testdata", "litert_check.py")}
	for _, path := range testmodels.Files(t, "tflite") {
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out := relaid(t, orig, 16384)
		p := filepath.Join(dir, filepath.Base(path))
		if err := os.WriteFile(p, out, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, path, p)
	}
	got, err := exec.Command("python3", args...).CombinedOutput()
	t.Logf("%s", got)
	if err != nil {
		t.Fatalf("litert_check.py: %v", err)
	}
	if !strings.Contains(string(got), "same ") {
		t.Errorf("the interpreter ran no file: want at least one compared")
	}
}

// TestRelayoutSize: a relaid real file is no larger than the original and
// one alignment unit per buffer it moves (the padding before each), where
// the buffers moved are the distinct byte ranges of its tensors as the
// independent reader lists them: the moved bytes leave the FlatBuffer.
func TestRelayoutSize(t *testing.T) {
	for _, path := range testmodels.Files(t, "tflite") {
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ranges := map[[2]int64]bool{}
		for _, tn := range testmodels.Load(t, path).Tensors {
			if tn.Offset != nil && tn.NBytes > 0 {
				ranges[[2]int64{*tn.Offset, tn.NBytes}] = true
			}
		}
		for _, align := range []int64{64, 16384} {
			out := relaid(t, orig, align)
			// The zip archive of associated files is placed on 16 bytes.
			if limit := int64(len(orig)) + int64(len(ranges))*align + 16; int64(len(out)) > limit {
				t.Errorf("%s at %d: %d bytes from %d, want at most %d (%d buffers moved)", filepath.Base(path), align, len(out), len(orig), limit, len(ranges))
			}
		}
	}
}

// TestRelayoutZipOffsets: the zip archive of associated files moves with
// its offsets rewritten: Python's zipfile (and Go's archive/zip) finds
// every member's local header exactly at the offset the central directory
// gives, with no correction for bytes before the archive, and the
// member's bytes are the original's.
func TestRelayoutZipOffsets(t *testing.T) {
	n := 0
	for _, path := range testmodels.Files(t, "tflite") {
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		zo, err := zip.NewReader(bytes.NewReader(orig), int64(len(orig)))
		if err != nil {
			continue
		}
		n++
		out := relaid(t, orig, 16384)
		zr, err := zip.NewReader(bytes.NewReader(out), int64(len(out)))
		if err != nil {
			t.Fatalf("%s: the relaid archive: %v", filepath.Base(path), err)
		}
		if len(zr.File) != len(zo.File) {
			t.Fatalf("%s: %d members, want %d", filepath.Base(path), len(zr.File), len(zo.File))
		}
		for i, f := range zr.File {
			want, _ := zo.File[i].OpenRaw()
			got, err := f.OpenRaw()
			if err != nil {
				t.Fatal(err)
			}
			wb, _ := io.ReadAll(want)
			gb, _ := io.ReadAll(got)
			if f.Name != zo.File[i].Name || !bytes.Equal(gb, wb) {
				t.Errorf("%s: member %d (%s) differs", filepath.Base(path), i, f.Name)
			}
		}
		if _, err := exec.LookPath("python3"); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatal("python3 is required under CI=true")
			}
			continue
		}
		p := filepath.Join(t.TempDir(), "copy.tflite")
		if err := os.WriteFile(p, out, 0o644); err != nil {
			t.Fatal(err)
		}
		// Python's zipfile reads the offsets as written, plus any bytes
		// before the archive it infers (concat): there must be none, and
		// every member's local header must be where its offset says.
		script := `
import sys, zipfile, hashlib
raw = open(sys.argv[1], "rb").read()
e = zipfile._EndRecData(open(sys.argv[1], "rb"))
assert e[zipfile._ECD_LOCATION] - e[zipfile._ECD_SIZE] - e[zipfile._ECD_OFFSET] == 0, "bytes before the archive"
z = zipfile.ZipFile(sys.argv[1])
for i in z.infolist():
    assert raw[i.header_offset:i.header_offset+4] == b"PK\x03\x04", (i.filename, i.header_offset)
    print(i.filename, hashlib.sha256(z.read(i)).hexdigest())
`
		got, err := exec.Command("python3", "-c", script, p).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: Python's zipfile: %v: %s", filepath.Base(path), err, got)
		}
		var want strings.Builder
		for _, f := range zo.File {
			rc, _ := f.Open()
			b, _ := io.ReadAll(rc)
			fmt.Fprintf(&want, "%s %x\n", f.Name, sha256.Sum256(b))
		}
		if string(got) != want.String() {
			t.Errorf("%s: Python's zipfile reads\n%s\nwant\n%s", filepath.Base(path), got, want.String())
		}
	}
	if n == 0 {
		t.Error("no real file with associated files")
	}
}
