package loader_test

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/tflitegen"
	"github.com/edgeload/edgeload/internal/testkit/ziptest"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/mmapfile"
)

// TestTaskBundle: a MediaPipe task bundle (testdata/tiny.task: a zip that
// starts with zero padding, of two TFLite models) is no model: Open's
// error wraps ErrUnknownFormat and says how to open the models stored in
// it, naming the first as ARCHIVE!/ENTRY; ArchiveEntries lists both, and
// each opens as that entry with the bytes tflitegen wrote.
func TestTaskBundle(t *testing.T) {
	const path = "../testdata/tiny.task"
	_, err := loader.Open(path)
	if !errors.Is(err, loader.ErrUnknownFormat) || !strings.Contains(err.Error(), "ARCHIVE!/ENTRY") || !strings.Contains(err.Error(), path+"!/hand_detector.tflite") {
		t.Fatalf("Open(%s): %v, want ErrUnknownFormat naming ARCHIVE!/ENTRY and %s!/hand_detector.tflite", path, err, path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.HasPrefix(raw, []byte("PK")) {
		t.Fatal("the fixture starts with a zip signature; MediaPipe's bundles start with padding")
	}
	entries, err := loader.ArchiveEntries(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{
		"hand_detector.tflite":           tflitegen.Sample(false).Bytes(),
		"hand_landmarks_detector.tflite": tflitegen.Sample(true).Bytes(),
	}
	if len(entries) != len(want) {
		t.Fatalf("%d entries, want %d: %+v", len(entries), len(want), entries)
	}
	for _, e := range entries {
		w, ok := want[e.Name]
		if !ok || !e.Stored || e.Format != loader.Format("tflite") || e.Archive || e.Size != int64(len(w)) {
			t.Errorf("entry %+v, want a stored tflite model of %d bytes", e, len(w))
			continue
		}
		m, err := loader.Open(path, loader.WithZipEntry(e.Name))
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		mf, err := mmapfile.Open(path, mmapfile.WithZipEntry(e.Name))
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, mf.Len())
		if _, err := mf.ReadAt(got, 0); err != nil || !bytes.Equal(got, w) || m.Format() != loader.Format("tflite") {
			t.Errorf("%s: %s, %d bytes (%v): not the model written", e.Name, m.Format(), len(got), err)
		}
		mf.Close()
		m.Close()
	}
}

// TestUnknownZipMessages: every unknown-format error of a file that is a
// zip archive names ARCHIVE!/ENTRY, whatever it holds (models stored or
// compressed, nested bundles, no model), and that of a file that is no
// zip does not.
func TestUnknownZipMessages(t *testing.T) {
	model := tflitegen.Sample(false).Bytes()
	task, err := os.ReadFile("../testdata/tiny.task")
	if err != nil {
		t.Fatal(err)
	}
	plain, err := ziptest.Bytes(ziptest.Entry{Name: "readme.txt", Data: []byte("hello")}, ziptest.Entry{Name: "m.tflite", Data: model})
	if err != nil {
		t.Fatal(err)
	}
	deflated, err := ziptest.Bytes(ziptest.Entry{Name: "m.tflite", Data: model, Deflate: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data []byte
		want []string
	}{
		{"a zip of a text file and a stored model", plain, []string{"1 stored models (m.tflite)", "x.zip!/m.tflite"}},
		{"a zip of a deflated model", deflated, []string{"none of them a stored model"}},
		{"a bundle holding a bundle", ziptest.TaskBundle(ziptest.Entry{Name: "inner.task", Data: task}, ziptest.Entry{Name: "m.tflite", Data: model}), []string{"x.zip!/m.tflite", "zip archives (inner.task)"}},
		{"a bundle of text", ziptest.TaskBundle(ziptest.Entry{Name: "a.txt", Data: []byte("a")}), []string{"none of them"}},
	} {
		path := t.TempDir() + "/x.zip"
		if err := os.WriteFile(path, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := loader.Open(path)
		if !errors.Is(err, loader.ErrUnknownFormat) || !strings.Contains(err.Error(), "ARCHIVE!/ENTRY") {
			t.Errorf("%s: %v, want ErrUnknownFormat naming ARCHIVE!/ENTRY", c.name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want it to say %q", c.name, err, w)
			}
		}
	}
	notZip := slices.Concat([]byte("NOTAMODEL"), make([]byte, 64))
	if _, err := loader.New(mmapfile.NewBytes(notZip)); !errors.Is(err, loader.ErrUnknownFormat) || strings.Contains(err.Error(), "ARCHIVE") {
		t.Errorf("a file that is no zip: %v, want ErrUnknownFormat without ARCHIVE!/ENTRY", err)
	}
}
