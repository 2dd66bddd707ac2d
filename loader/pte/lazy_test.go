package pte_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/memstat"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

// TestOpenTouchesNoSegmentPage opens a program whose constant segment is
// 1 GiB (a sparse file) and checks that Open faulted in none of it: no
// page of the segment is resident (mincore), and the process's resident
// file-backed memory grew by at most the program region plus 1 MiB.
func TestOpenTouchesNoSegmentPage(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const gib = 1 << 30
	w := &writer.PTE{Methods: []writer.PTEMethod{{Name: "forward", Tensors: []writer.PTETensor{
		{ScalarType: writer.PTEFloat32, Sizes: []int32{gib / 4}, Name: "big.a"}, // a 1 GiB hole
		{ScalarType: writer.PTEFloat32, Sizes: []int32{1 << 18}, Name: "big.b"}, // 1 MiB of bytes after it

	}}}}
	w.Methods[0].Tensors[1].Fill = func(p []byte, off int64) {
		for i := range p {
			p[i] = byte(off + int64(i))
		}
	}
	path := filepath.Join(t.TempDir(), "big.pte")
	info, err := w.WriteFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Segments[0][1] < gib {
		t.Fatalf("constant segment of %d bytes, want 1 GiB", info.Segments[0][1])
	}
	runtime.GC()
	before, rssErr := memstat.Read()
	p, err := mapOpen(t, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	after, rssErr2 := memstat.Read()

	// mincore reports the page cache: big.b's pages are there because the
	// writer just wrote them. Look at big.a (a hole nobody has read), less
	// its first page, which also holds the end of the program region
	// (segments are 128-aligned, not page-aligned), and its last.
	seg := p.Tensors()[0].Data
	ps := int64(p.MappedFile().PageSize())
	skip := (ps - seg.Offset()%ps) % ps
	end := (seg.Offset() + seg.Len()) / ps * ps // its last page is shared with big.b
	inner, err := seg.Sub(skip, end-seg.Offset()-skip)
	if err != nil {
		t.Fatal(err)
	}
	res, total, err := inner.Resident()
	if err != nil {
		t.Fatalf("Resident: %v", err)
	}
	if int64(total) < gib/ps-2 || res != 0 {
		t.Errorf("%d of big.a's %d pages are resident after Open, want 0", res, total)
	}
	// The program region itself was read (verified), so some of it is
	// resident: show that Resident measures something.
	pres, ptotal, err := p.ProgramData().Resident()
	if err != nil || pres == 0 {
		t.Errorf("program region: %d/%d pages resident (%v), want > 0", pres, ptotal, err)
	}
	if rssErr == nil && rssErr2 == nil {
		grew := (after.RssFile + after.RssShm) - (before.RssFile + before.RssShm)
		limit := info.ProgramSize + 1<<20
		t.Logf("file-backed RSS grew by %d bytes at Open (program region %d bytes, file %d bytes)", grew, info.ProgramSize, info.FileSize)
		if grew > limit {
			t.Errorf("file-backed RSS grew by %d bytes at Open, more than the program region + 1 MiB (%d)", grew, limit)
		}
	} else {
		t.Logf("no RSS measurement here: %v / %v", rssErr, rssErr2)
	}
	// Reading one tensor faults in its pages only.
	tt, _ := p.Tensor("big.b")
	if err := tt.Data.Touch(); err != nil {
		t.Fatal(err)
	}
	// (Kernel read-ahead may bring in a few MiB around big.b's start.)
	if r, n, _ := p.Tensors()[0].Data.Resident(); r > n/16 {
		t.Errorf("touching big.b made %d of big.a's %d pages resident", r, n)
	}
	if r, n, _ := tt.Data.Resident(); r != n {
		t.Errorf("big.b: %d of %d pages resident after Touch", r, n)
	}
	if b, err := tt.Data.Bytes(); err != nil || b[12345] != byte(12345%256) {
		t.Errorf("big.b's bytes were not written by the filler: %v", err)
	}
}

// TestLookupsAllocateNothing proves Tensor, TensorAt, Method and
// NamedDataByKey allocate nothing.
func TestLookupsAllocateNothing(t *testing.T) {
	p, _ := openGen(t, richProgram())
	name := "forward/values/2"
	var sink int64
	allocs := testing.AllocsPerRun(200, func() {
		a, _ := p.Tensor(name)
		b, _ := p.Tensor("layer.weight")
		c, _ := p.ValueTensor("forward", 3)
		d, _ := p.NamedDataByKey("sha-abc")
		m, _ := p.Method("second")
		_, miss := p.Tensor("no such tensor")
		if miss {
			sink++
		}
		sink += a.NBytes + b.NBytes + c.NBytes + d.Data.Len() + int64(m.Index)
	})
	if allocs != 0 {
		t.Errorf("lookups allocate %.1f times per run, want 0", allocs)
	}
	if sink == 0 {
		t.Error("lookups found nothing")
	}
}

func BenchmarkTensorLookup(b *testing.B) {
	p, _ := openGen(b, richProgram())
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := p.Tensor("layer.weight"); !ok {
			b.Fatal("not found")
		}
		if _, ok := p.ValueTensor("forward", 2); !ok {
			b.Fatal("not found")
		}
		if _, ok := p.NamedDataByKey("sha-abc"); !ok {
			b.Fatal("not found")
		}
	}
}

func BenchmarkOpenRealSized(b *testing.B) {
	w := richProgram()
	raw, err := w.Bytes()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p, err := pte.NewFile(mmapfile.NewBytes(raw))
		if err != nil {
			b.Fatal(err)
		}
		p.Close()
	}
}

// BenchmarkOpenReal opens each real program (mapped, verified, indexed).
func BenchmarkOpenReal(b *testing.B) {
	for _, path := range testmodels.Files(b, "pte") {
		if filepath.Ext(path) != ".pte" {
			continue
		}
		b.Run(filepath.Base(path), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				mf, err := mmapfile.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				p, err := pte.NewFile(mf)
				if err != nil {
					b.Fatal(err)
				}
				p.Close()
				mf.Close()
			}
		})
	}
}

// TestTensorDataBuildsNothing proves that TensorData hands out every
// tensor's bytes without building the tensor list and without allocating,
// and that the list built afterwards has the same views, names and shapes
// the file says.
func TestTensorDataBuildsNothing(t *testing.T) {
	// The rich program without its external tensors (the view of a linked
	// external tensor is the list's).
	w := richProgram()
	for i := range w.Methods {
		var keep []writer.PTETensor
		for _, x := range w.Methods[i].Tensors {
			if x.Kind != writer.PTEExternal {
				keep = append(keep, x)
			}
		}
		w.Methods[i].Tensors = keep
	}
	p, _ := openGen(t, w)
	if pte.TensorListBuilt(p) || pte.MethodsBuilt(p) {
		t.Fatalf("Open built the tensor list (%v) or the methods (%v)", pte.TensorListBuilt(p), pte.MethodsBuilt(p))
	}
	n := p.NumTensors()
	if n == 0 {
		t.Fatal("no tensors")
	}
	var total int64
	allocs := testing.AllocsPerRun(100, func() {
		total = 0
		for i := range n {
			b, err := p.TensorData(i).Bytes()
			if err != nil {
				t.Fatal(err)
			}
			total += int64(len(b))
		}
	})
	if allocs != 0 {
		t.Errorf("TensorData allocates %.1f times per pass, want 0", allocs)
	}
	if pte.TensorListBuilt(p) || pte.MethodsBuilt(p) {
		t.Fatalf("TensorData built the tensor list (%v) or the methods (%v)", pte.TensorListBuilt(p), pte.MethodsBuilt(p))
	}
	ts := p.Tensors()
	if !pte.TensorListBuilt(p) || len(ts) != n {
		t.Fatalf("Tensors: %d tensors (built %v), NumTensors %d", len(ts), pte.TensorListBuilt(p), n)
	}
	var want int64
	for i := range ts {
		d := p.TensorData(i)
		if d.Offset() != ts[i].Data.Offset() || d.Len() != ts[i].Data.Len() || d.Len() != ts[i].NBytes {
			t.Errorf("tensor %q: TensorData [%d,+%d), Data [%d,+%d), NBytes %d", ts[i].Name,
				d.Offset(), d.Len(), ts[i].Data.Offset(), ts[i].Data.Len(), ts[i].NBytes)
		}
		want += ts[i].Data.Len()
	}
	if total != want || total == 0 {
		t.Errorf("TensorData covered %d bytes, the list %d", total, want)
	}
}

// appendMatchesTensorData checks that AppendTensorBytes hands out, after a
// prefix it leaves alone, TensorData(i).Bytes() for every i: the same
// length and bytes, at the same address (so a zero-copy view in whole
// and memory mode stays one).
func appendMatchesTensorData(p *pte.Program) error {
	prefix := []byte("kept")
	got, err := p.AppendTensorBytes([][]byte{prefix})
	if err != nil {
		return fmt.Errorf("AppendTensorBytes: %v", err)
	}
	if len(got) != 1+p.NumTensors() || &got[0][0] != &prefix[0] {
		return fmt.Errorf("AppendTensorBytes: %d views after the prefix, NumTensors %d", len(got)-1, p.NumTensors())
	}
	for i, b := range got[1:] {
		want, err := p.TensorData(i).Bytes()
		if err != nil {
			return fmt.Errorf("TensorData(%d): %v", i, err)
		}
		if len(b) != len(want) || cap(b) != len(b) || !bytes.Equal(b, want) {
			return fmt.Errorf("tensor %d: AppendTensorBytes %d bytes (cap %d), TensorData %d", i, len(b), cap(b), len(want))
		}
		if len(b) > 0 && p.MappedFile().Mode() != mmapfile.ModeCopy && &b[0] != &want[0] {
			return fmt.Errorf("tensor %d: AppendTensorBytes and TensorData views at different addresses", i)
		}
	}
	return nil
}

// AppendTensorBytes gives every tensor's view in each mapping mode, nil
// for an external tensor with no data, allocates nothing when dst has room,
// and fails once the file is closed.
func TestAppendTensorBytes(t *testing.T) {
	w := richProgram()
	path := filepath.Join(t.TempDir(), "rich.pte")
	if _, err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	opens := map[string]func() (*pte.Program, error){
		"whole": func() (*pte.Program, error) {
			return mapOpen(t, path, []mmapfile.Option{mmapfile.WithMode(mmapfile.ModeWhole)})
		},
		"windowed": func() (*pte.Program, error) {
			return mapOpen(t, path, []mmapfile.Option{mmapfile.WithMode(mmapfile.ModeWindowed)})
		},
		"copy": func() (*pte.Program, error) {
			return mapOpen(t, path, []mmapfile.Option{mmapfile.WithMode(mmapfile.ModeCopy)})
		},
		"bytes": func() (*pte.Program, error) { return pte.NewFile(mmapfile.NewBytes(raw)) },
		"readerat": func() (*pte.Program, error) {
			return pte.NewFile(mmapfile.NewReaderAt(bytes.NewReader(raw), int64(len(raw))))
		},
	}
	for how, open := range opens {
		p, err := open()
		if err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		if err := appendMatchesTensorData(p); err != nil {
			t.Errorf("%s: %v", how, err)
		}
		var external, data int
		views, _ := p.AppendTensorBytes(nil)
		for i, b := range views {
			switch {
			case p.Tensors()[i].Location == format.LocExternal:
				external++
				if b != nil {
					t.Errorf("%s: external tensor %d has %d bytes", how, i, len(b))
				}
			case len(b) > 0:
				data++
			}
		}
		if external == 0 || data == 0 {
			t.Errorf("%s: %d external tensors, %d with data: the program should have both", how, external, data)
		}
		if m := p.MappedFile().Mode(); m == mmapfile.ModeWhole || m == mmapfile.ModeMemory {
			dst := make([][]byte, 0, p.NumTensors())
			if allocs := testing.AllocsPerRun(50, func() { dst, _ = p.AppendTensorBytes(dst[:0]) }); allocs != 0 {
				t.Errorf("%s: AppendTensorBytes allocates %.1f times with room in dst, want 0", how, allocs)
			}
		}
		if err := p.MappedFile().Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := p.AppendTensorBytes(nil); !errors.Is(err, format.ErrClosed) {
			t.Errorf("%s: AppendTensorBytes after the file's Close: %v, want ErrClosed", how, err)
		}
		p.Close()
	}
}

// TestBadValueFailsAtFirstUse opens programs whose one problem is a value
// Open leaves to the method's check (a tensor without data in the file, a
// tensor list): Open succeeds and hands out the constant tensor, and
// Value, UseOrder and VerifyMethods return a *format.FormatError naming
// the value, every time.
func TestBadValueFailsAtFirstUse(t *testing.T) {
	planned := writer.PTETensor{Kind: writer.PTEPlanned, ScalarType: writer.PTEFloat32, Sizes: []int32{4}}
	for _, c := range []struct {
		name   string
		bad    writer.PTETensor
		values []writer.PTEValue
		field  string
	}{
		{"scalar type", writer.PTETensor{Kind: writer.PTEPlanned, ScalarType: 99, Sizes: []int32{4}}, nil, "values[1].val.scalar_type"},
		{"negative size", writer.PTETensor{Kind: writer.PTEPlanned, ScalarType: writer.PTEFloat32, Sizes: []int32{-4}}, nil, "values[1].val.sizes[0]"},
		{"dim order", writer.PTETensor{Kind: writer.PTEPlanned, ScalarType: writer.PTEFloat32, Sizes: []int32{4, 4}, DimOrder: []uint8{1, 1}}, nil, "values[1].val.dim_order[1]"},
		{"list item", planned, []writer.PTEValue{{Kind: writer.PTETensorList, Items: []int32{0, 7}}}, "values[2].val.items[1]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := &writer.PTE{Methods: []writer.PTEMethod{{Name: "forward", Tensors: []writer.PTETensor{
				{ScalarType: writer.PTEFloat32, Sizes: []int32{2, 2}, Name: "w"}, c.bad,
			}, Values: c.values}}}
			b, err := w.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			p, err := pte.NewFile(mmapfile.NewBytes(b))
			if err != nil {
				t.Fatalf("Open: %v, want the check left to the method", err)
			}
			defer p.Close()
			if p.NumTensors() != 1 || p.Tensors()[0].Name != "w" || p.TensorData(0).Len() != 16 {
				t.Fatalf("tensors %+v, want the constant w alone", p.Tensors())
			}
			m, _ := p.Method("forward")
			for i := 0; i < 2; i++ {
				_, verr := m.Value(0)
				_, oerr := p.UseOrder("forward")
				for what, err := range map[string]error{"Value": verr, "UseOrder": oerr, "VerifyMethods": p.VerifyMethods(), "Check": p.Check()} {
					var fe *format.FormatError
					if !errors.As(err, &fe) || !strings.HasSuffix(fe.Field, c.field) {
						t.Errorf("%s: %v, want a *format.FormatError at …%s", what, err, c.field)
					}
				}
			}
		})
	}
}
