package tflite

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/edgeload/edgeload/internal/schema/tflitefb"
	"github.com/edgeload/edgeload/internal/testkit/tflitegen"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
)

// TestClosedPooled: a small file's FlatBuffer is read into a pooled
// buffer, which Close hands back for another Open to fill. What a closed
// model builds after Close reads nothing of it (it is scribbled over
// here): the listing has the listed tensors' places and bytes, and names
// made of their indices; the use order, the quantization parameters and
// Relayout report ErrClosed. Readers that run while Close does (under
// -race) see the buffer whole or not at all.
func TestClosedPooled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sample.tflite")
	model := tflitegen.Sample(false)
	// A quantized tensor, whose parameters Quantization reads from the
	// FlatBuffer at each call.
	sg := &model.Subgraphs[0]
	sg.Tensors = append(sg.Tensors, tflitegen.Tensor{Name: "q", Type: tflitefb.TensorTypeINT8, Shape: []int32{4}, Buffer: uint32(len(model.Buffers)), Scale: []float32{0.5}})
	model.Buffers = append(model.Buffers, tflitegen.Buffer{Data: []byte{1, 2, 3, 4}})
	if err := os.WriteFile(path, model.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	mf, err := mmapfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	for _, concurrent := range []bool{false, true} {
		m, err := NewFile(mf)
		if err != nil {
			t.Fatal(err)
		}
		buf := m.region
		if buf == nil {
			t.Fatal("a small file's FlatBuffer was not read into a pooled buffer")
		}
		n, nsub := m.NumTensors(), m.nsub
		if n == 0 {
			t.Fatal("the sample lists no tensor")
		}
		var wg, started sync.WaitGroup
		if concurrent {
			// Readers of the FlatBuffer until Close stops them.
			i, ok := m.Lookup("q")
			if !ok || !m.Tensors()[i].Quantized {
				t.Fatal("no quantized tensor q")
			}
			x := m.Tensors()[i]
			for range 2 {
				started.Add(1)
				wg.Go(func() {
					_, _ = m.UseOrder("")
					started.Done()
					for {
						if _, err := m.Quantization(x); err != nil {
							return
						}
					}
				})
			}
			started.Wait()
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		for i := range *buf {
			(*buf)[i] = 0xff // what another Open may write there
		}
		wg.Wait()
		if err := m.Close(); err != nil {
			t.Fatalf("a second Close: %v", err)
		}
		if concurrent {
			continue // the concurrent readers may have built everything before Close
		}
		if len(m.Tensors()) != n || len(m.Subgraphs()) != nsub {
			t.Fatalf("closed: %d tensors in %d subgraphs, want %d in %d", len(m.Tensors()), len(m.Subgraphs()), n, nsub)
		}
		for i, x := range m.Tensors() {
			if want := strconv.Itoa(x.Subgraph) + "/tensors/" + strconv.Itoa(x.Index); x.Name != want || x.Data != m.TensorData(i) {
				t.Errorf("closed: tensor %d named %q, want %q, with its bytes", i, x.Name, want)
			}
			if i, ok := m.Lookup(x.Name); !ok || m.TensorAt(i) != &x.Tensor {
				t.Errorf("closed: Lookup(%q) = %d, %v", x.Name, i, ok)
			}
		}
		if len(m.OperatorCodes()) != 0 || m.Description() != "" {
			t.Errorf("closed: %d operator codes, description %q, want none", len(m.OperatorCodes()), m.Description())
		}
		if _, err := m.UseOrder(""); !errors.Is(err, format.ErrClosed) {
			t.Errorf("closed: UseOrder: %v, want ErrClosed", err)
		}
		if _, err := m.Relayout(format.RelayoutOptions{Align: 64}); !errors.Is(err, format.ErrClosed) {
			t.Errorf("closed: Relayout: %v, want ErrClosed", err)
		}
		if _, err := m.Quantization(&Tensor{Quantized: true}); !errors.Is(err, format.ErrClosed) {
			t.Errorf("closed: Quantization: %v, want ErrClosed", err)
		}
	}
}
