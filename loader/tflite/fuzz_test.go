package tflite_test

import (
	"errors"
	"testing"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/tflitegen"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/tflite"
)

func tflitegenSample(external bool) []byte { return tflitegen.Sample(external).Bytes() }

// FuzzOpen opens arbitrary bytes: each must give a model that passes
// exercise or a tflite *format.FormatError, and the same model or error
// from a file, read sparsely a byte at a time when it is (compareFile).
// Seeds: the real files and the generated ones.
func FuzzOpen(f *testing.F) {
	defer func(s int) { fbverify.FetchPageShift = s }(fbverify.FetchPageShift)
	fbverify.FetchPageShift = 0
	for _, b := range hostile.RealSeeds("tflite") {
		f.Add(b)
	}
	for _, s := range generated() {
		f.Add(s.Data)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		compareFile(t, b, true)
		m, err := open(b)
		if err != nil {
			var fe *format.FormatError
			if !errors.As(err, &fe) || fe.Format != "tflite" {
				t.Fatalf("error %v is not a tflite FormatError", err)
			}
			if err := hostile.CheckError("tflite", err); err != nil {
				t.Fatal(err)
			}
			if known, problem := hostile.Contradiction(err); !known || problem != "" {
				t.Fatalf("message %q: known %v, contradicts itself: %q", err, known, problem)
			}
			return
		}
		defer m.Close()
		if err := exercise(m); err != nil {
			t.Fatal(err)
		}
		// A model that opens relays out to a copy that opens, or Relayout
		// says why not.
		l, err := m.Relayout(format.RelayoutOptions{Align: 64})
		if err != nil {
			var fe *format.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("Relayout: %v is not a FormatError", err)
			}
			return
		}
		if _, err := open(write(t, l)); err != nil {
			t.Fatalf("the relaid copy does not open: %v", err)
		}
	})
}

// TestSweep opens every truncation of the real and generated files and
// every single-byte mutation of their FlatBuffer region (sampled for large
// files, see hostile.SweepFiles): each gives a model that passes exercise
// or a tflite *format.FormatError, within the time and memory bounds.
func TestSweep(t *testing.T) {
	regionEnd := func(b []byte) (int64, error) {
		m, err := open(b)
		if err != nil {
			return 0, err
		}
		return m.FlatBufferLen(), nil
	}
	hostile.Sweep(t, hostile.Target{Format: "tflite", Open: func(b []byte) (func() error, error) {
		m, err := tflite.NewFile(mmapfileBytes(b))
		if err != nil {
			return nil, err
		}
		return func() error {
			defer m.Close()
			return exercise(m)
		}, nil
	}}, hostile.SweepFiles(t, "tflite", generated(), regionEnd)...)
}
