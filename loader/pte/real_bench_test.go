package pte

import (
	"os"
	"path"
	"runtime"
	"testing"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/mmapfile"
)

// phasePrograms are the programs BenchmarkOpenPhases opens: real ones,
// and const1024, 1024 constants of [16, 16] float32 in one segment (the
// layout of the bench package's pte-4G, whose tensors are larger).
var phasePrograms = []string{"pte/arduino-keyword-spotting.pte", "pte/stories260k-qnn.pte", "pte/arduino-add.pte", "const1024"}

// BenchmarkOpenPhases splits Open of the programs into what it does
// beyond the system calls: verify (the lazy walk alone), check (the
// semantic checks and the tensor records Open makes after the walk, over
// a verified buffer), parse (NewBytes:
// headers, verification and the tables, over bytes in memory, and a view
// of every tensor) and open (Open of the file, a view of every tensor,
// Close). Each also reports cpu-ns/op, the CPU time of the loop's thread
// (Linux): on a machine shared with other work it moves far less than the
// wall time ns/op.
func BenchmarkOpenPhases(b *testing.B) {
	for _, f := range phasePrograms {
		b.Run(path.Base(f), func(b *testing.B) {
			var p string
			var data []byte
			var err error
			if f == "const1024" {
				m := writer.PTEMethod{Name: "forward", Tensors: make([]writer.PTETensor, 1024)}
				for i := range m.Tensors {
					m.Tensors[i] = writer.PTETensor{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{16, 16}}
				}
				w := writer.PTE{Methods: []writer.PTEMethod{m}, SegmentAlignment: 128, TensorAlignment: 128}
				if data, err = w.Bytes(); err != nil {
					b.Fatal(err)
				}
				p = path.Join(b.TempDir(), "const1024.pte")
				if err := os.WriteFile(p, data, 0o644); err != nil {
					b.Fatal(err)
				}
			} else {
				p = testmodels.Path(b, f)
				if data, err = os.ReadFile(p); err != nil {
					b.Fatal(err)
				}
			}
			prog, err := NewFile(mmapfile.NewBytes(data))
			if err != nil {
				b.Fatal(err)
			}
			fb := data[:prog.Header().ProgramSize]
			prog.Close()
			b.Run("verify", func(b *testing.B) {
				b.ReportAllocs()
				defer cpuMetric(b)()
				for b.Loop() {
					w := fbverify.NewWalk(fb, fbverify.Options{Format: formatName})
					w.SetLazy(true)
					if err := w.Verify("Program", ptefb.VerifyProgram); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("check", func(b *testing.B) {
				b.ReportAllocs()
				mf := mmapfile.NewBytes(data)
				hdr := prog.Header()
				root := ptefb.GetRootAsProgram(fb, 0)
				defer cpuMetric(b)()
				for b.Loop() {
					p := &Program{mf: mf, hdr: hdr, fb: fb}
					bl := &builder{p: p, root: *root, fb: fb, size: int64(len(data)), budget: 4*int64(len(fb)) + 1<<16}
					if err := bl.build(); err != nil {
						b.Fatal(err)
					}
					putRecs(p.recBuf, p.recs)
				}
			})
			b.Run("parse", func(b *testing.B) {
				b.ReportAllocs()
				var dst [][]byte
				defer cpuMetric(b)()
				for b.Loop() {
					prog, err := NewFile(mmapfile.NewBytes(data))
					if err != nil {
						b.Fatal(err)
					}
					if dst, err = prog.AppendTensorBytes(dst[:0]); err != nil {
						b.Fatal(err)
					}
					prog.Close()
				}
			})
			b.Run("open", func(b *testing.B) {
				b.ReportAllocs()
				var dst [][]byte
				defer cpuMetric(b)()
				for b.Loop() {
					mf, err := mmapfile.Open(p, mmapfile.WithMode(mmapfile.ModeWhole))
					if err != nil {
						b.Fatal(err)
					}
					prog, err := NewFile(mf)
					if err != nil {
						b.Fatal(err)
					}
					if dst, err = prog.AppendTensorBytes(dst[:0]); err != nil {
						b.Fatal(err)
					}
					prog.Close()
					mf.Close()
				}
			})
		})
	}
}

// cpuMetric locks the benchmark to its thread and returns the function
// that reports the thread's CPU time per op (cpu-ns/op) at the end.
func cpuMetric(b *testing.B) func() {
	runtime.LockOSThread()
	t0 := threadCPU()
	return func() {
		if t1 := threadCPU(); t0 > 0 && b.N > 0 {
			b.ReportMetric(float64(t1-t0)/float64(b.N), "cpu-ns/op")
		}
		runtime.UnlockOSThread()
	}
}
