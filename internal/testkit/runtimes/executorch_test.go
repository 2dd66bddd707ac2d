package runtimes

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	_ "github.com/edgeload/edgeload/formats" // every built-in format
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader"
)

func TestMain(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// pteCase is one program to run: the methods the portable runtime must run
// on it, and why it cannot run the others.
type pteCase struct {
	name    string
	program string
	data    string   // its .ptd, if any
	mustRun []string // methods that must give outputs; nil: every method
	cannot  string   // why the portable runtime cannot run the rest (or any of it)
	// variants whose run may differ from the original's, and why.
	differ map[string]string
}

// file returns the case's program as the runtime loads it.
func (c pteCase) file() File {
	f := File{Path: c.program}
	if c.data != "" {
		f.Data = []string{c.data}
	}
	return f
}

// repackVariants writes the repacked variants of c into dir: --align 16KiB,
// --tensor-align 16KiB, --externalize (with its new .ptd) and, for a
// program with a .ptd, that .ptd realigned.
func repackVariants(t *testing.T, c pteCase, dir string) []variant {
	t.Helper()
	base := filepath.Join(dir, c.name)
	var dataArgs []string
	if c.data != "" {
		dataArgs = []string{"--data", c.data}
	}
	var vs []variant
	repack := func(v variant, args ...string) {
		args = append(append(args, dataArgs...), c.program, v.file.Path)
		if msg, ok := Repack(t, args...); !ok {
			t.Errorf("%s: edgeload repack %s: %s", c.name, strings.Join(args, " "), msg)
			return
		}
		v.differ = c.differ[v.name]
		vs = append(vs, v)
	}
	repack(variant{name: "align-16KiB", file: File{base + ".align.pte", c.file().Data}}, "--align", "16KiB")
	repack(variant{name: "tensor-align-16KiB", file: File{base + ".talign.pte", c.file().Data}}, "--tensor-align", "16KiB")
	if c.data == "" {
		repack(variant{name: "externalize", file: File{base + ".ext.pte", []string{base + ".ext.ptd"}}}, "--externalize", base+".ext.ptd")
	} else {
		// Its constants go to a second .ptd beside the one it has: ExecuTorch's
		// Python bindings take one .ptd a program, so it is repacked and
		// compared with repack --check, but not run.
		repack(variant{name: "externalize", file: File{base + ".ext.pte", []string{c.data, base + ".ext.ptd"}},
			skip: "needs two .ptd files; the Python bindings load one a program"}, "--externalize", base+".ext.ptd")
		ptd := base + ".align.ptd"
		if msg, ok := Repack(t, "--align", "16KiB", c.data, ptd); !ok {
			t.Errorf("%s: edgeload repack --align 16KiB %s: %s", c.name, c.data, msg)
		} else {
			vs = append(vs, variant{name: "ptd-align-16KiB", file: File{c.program, []string{ptd}}, differ: c.differ["ptd-align-16KiB"]})
		}
	}
	// The --align variant with one weight byte flipped, and with one byte of
	// every weight: the runtime, or repack --check, must tell each from the
	// original.
	for _, v := range vs {
		if v.name == "align-16KiB" {
			vs = append(vs, breakages(t, dir, v.file)...)
			break
		}
	}
	return vs
}

// runCases runs every case and its repacked variants in the portable
// runtime (one driver call), each method on every input set of Seeds and
// twice on each (mutable state advances), and checks each variant: repack
// --check finds no difference from the original and the runtime gives the
// original's outputs bit for bit, and the copy with a flipped weight is
// caught (checkBreakage).
func runCases(t *testing.T, py string, cases []pteCase) {
	dir := t.TempDir()
	var runs []PTERun
	vars := map[string][]variant{}
	add := func(name string, f File) {
		runs = append(runs, PTERun{Name: name, Program: f.Path, Data: f.datum(), Iterations: 2, Seeds: Seeds})
	}
	for _, c := range cases {
		add(c.name, c.file())
		vars[c.name] = repackVariants(t, c, dir)
		for _, v := range vars[c.name] {
			if v.skip == "" {
				add(c.name+"/"+v.name, v.file)
			}
		}
	}
	var res struct{ Runs []Run }
	Driver(t, py, "pte", map[string]any{"runs": runs}, &res)
	byName := map[string]Run{}
	for _, r := range res.Runs {
		byName[r.Name] = r
	}
	flips := map[string]caught{}
	ran := map[string]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			orig, ok := byName[c.name]
			if !ok {
				t.Fatal("the driver did not report the original")
			}
			all := make([]string, 0, len(orig.Methods))
			for n := range orig.Methods {
				all = append(all, n)
			}
			sort.Strings(all)
			want := c.mustRun
			if want == nil {
				want = all
			}
			if got := orig.Ran(); !slices.Equal(got, want) {
				t.Errorf("the original ran methods %q, want %q (%s)", got, want, orig.Why())
			}
			if len(want) < len(all) || orig.LoadError != "" {
				t.Logf("not run by the portable runtime: %s", c.cannot)
			}
			s := subject{file: c.file(), orig: orig, runs: map[string]Run{}, cannot: c.cannot}
			for _, v := range vars[c.name] {
				s.runs[v.name] = byName[c.name+"/"+v.name]
			}
			ran[c.name] = len(orig.Ran()) > 0
			logInputs(t, s)
			var probe caught
			probed := false
			for _, v := range vars[c.name] {
				t.Run(v.name, func(t *testing.T) {
					if v.flip != nil {
						if got := checkBreakage(t, s, v); v.probe {
							flips[c.name], probe, probed = got, got, true
						}
						return
					}
					checkVariant(t, s, v)
				})
			}
			logWeights(t, s, probe, probed)
		})
	}
	requireRuntimeCatches(t, flips, ran)
}

// emptyPTD marks the --externalize variant of a program without constants:
// its .ptd is valid but holds nothing, and ExecuTorch 1.5 refuses a data
// map with no entries ("No non-empty named data maps provided to merge",
// error 0x12); the externalized program runs without it.
var emptyPTD = map[string]string{"externalize": "ExecuTorch refuses a .ptd with no entries; the program has no constants to move"}

// TestExecuTorchRealFiles runs the real programs of ../shared/models and
// their repacked variants in ExecuTorch's portable runtime.
func TestExecuTorchRealFiles(t *testing.T) {
	py := Python(t)
	d := testmodels.Dir(t)
	pte := func(n string) string { return filepath.Join(d, "pte", n) }
	ptd := func(n string) string { return filepath.Join(d, "ptd", n) }
	var constants []string
	for _, n := range []string{"ar_len", "bos_id", "dim", "eos_id", "head_dim", "kv_io_bit_width", "logits_scale",
		"logits_zero_point", "max_batch_size", "max_context_len", "max_seq_len", "n_bos", "n_eos", "n_kv_heads",
		"n_layers", "use_kv_cache", "vocab_size"} {
		constants = append(constants, "get_"+n)
	}
	for i := range 10 {
		constants = append(constants, fmt.Sprintf("get_kv_output_%d_quant_attr", i))
	}
	sort.Strings(constants)
	cases := []pteCase{
		{name: "arduino-add", program: pte("arduino-add.pte")},
		{name: "apple-add-noheader", program: pte("apple-add-noheader.pte"), differ: emptyPTD},
		{name: "addmul-external", program: pte("addmul-external.pte"), data: ptd("addmul-external.ptd")},
		{name: "stories260k-qnn", program: pte("stories260k-qnn.pte"), mustRun: constants,
			cannot: "prefill_forward and kv_forward run in a QNN delegate, which needs Qualcomm's QNN libraries and a Hexagon NPU; its 27 constant methods run",
			differ: emptyPTD},
		{name: "arduino-keyword-spotting", program: pte("arduino-keyword-spotting.pte"), mustRun: []string{},
			cannot: "forward calls cortex_m:: quantized kernels (CMSIS-NN, for Arm Cortex-M), which the portable runtime does not register; load and metadata are compared"},
		{name: "linear-inline-constant-buffer", program: pte("linear-inline-constant-buffer.pte"), mustRun: []string{},
			cannot: "the legacy inline constant_buffer is compiled out of the 1.5 runtime (ET_ENABLE_DEPRECATED_CONSTANT_BUFFER=0); the load error is compared"},
		{name: "linear-external", program: pte("linear-external.pte"), data: ptd("linear-legacy-2025.ptd"), mustRun: []string{},
			cannot: "its .ptd has the legacy 2025 FlatTensor layout, which the 1.5 runtime rejects as malformed; the error is compared",
			differ: map[string]string{"ptd-align-16KiB": "the runtime reads the legacy layout as the current one in both files; the garbage segment index it finds in the realigned file (base 16384) makes it crash (SIGSEGV) instead of reporting a malformed file"}},
	}
	runCases(t, py, cases)
}

// tinyCannot says why the repository's generated tiny programs do not run.
const tinyCannot = "written by the project's test writer, not by ExecuTorch: its memory plan places a tensor at offset 192 of a 32-byte arena, which the runtime refuses (0x21); load and the error are compared"

// exported returns the programs that testdata/executorch/make.py exported.
func exported(t *testing.T) (string, []pteCase) {
	dir := filepath.Join(testmodels.Root(), "testdata", "executorch")
	f := func(n string) string { return filepath.Join(dir, n) }
	return dir, []pteCase{
		{name: "mlp", program: f("mlp.pte")},
		{name: "conv", program: f("conv.pte")},
		{name: "counter", program: f("counter.pte")},
		{name: "mlp-external", program: f("mlp-external.pte"), data: f("mlp-external.ptd")},
		{name: "lora-base", program: f("lora-base.pte"), data: f("lora-foundation.ptd")},
		{name: "lora-adapted", program: f("lora-adapted.pte"), data: f("lora-foundation.ptd")},
		{name: "tiny", program: filepath.Join(testmodels.Root(), "testdata", "tiny.pte"), mustRun: []string{}, cannot: tinyCannot},
		{name: "tiny-external", program: filepath.Join(testmodels.Root(), "testdata", "tiny-external.pte"),
			data: filepath.Join(testmodels.Root(), "testdata", "tiny.ptd"), mustRun: []string{}, cannot: tinyCannot},
	}
}

// TestExecuTorchExported runs the programs exported by
// testdata/executorch/make.py (and the repository's tiny programs) and their
// repacked variants.
func TestExecuTorchExported(t *testing.T) {
	py := Python(t)
	dir, cases := exported(t)
	runCases(t, py, cases)

	// lora-split reads two .ptd files: the Python bindings load one a
	// program, so edgeload's own check covers it (every tensor of the
	// repacked program, resolved through both files, against the original).
	out := filepath.Join(t.TempDir(), "lora-split.pte")
	data := []string{"--data", filepath.Join(dir, "lora-foundation.ptd"), "--data", filepath.Join(dir, "lora-split-adapter.ptd")}
	if msg, ok := Repack(t, append(append([]string{"--tensor-align", "16KiB"}, data...), filepath.Join(dir, "lora-split.pte"), out)...); !ok {
		t.Fatalf("repack lora-split: %s", msg)
	}
	if msg, ok := Repack(t, append(append([]string{"--check"}, data...), filepath.Join(dir, "lora-split.pte"), out)...); !ok {
		t.Errorf("repack --check lora-split: %s", msg)
	}
}

// bundledResult is what the driver reports for a bundled program.
type bundledResult struct {
	Name           string `json:"name"`
	LoadError      string `json:"load_error"`
	EmbeddedSHA256 string `json:"embedded_program_sha256"`
	ProgramSHA256  string `json:"program_sha256"`
	Cases          []struct {
		Method  string  `json:"method"`
		Index   int     `json:"index"`
		OK      bool    `json:"ok"`
		Exact   bool    `json:"exact"`
		Error   string  `json:"error"`
		Outputs []Value `json:"outputs"`
	} `json:"cases"`
}

// TestExecuTorchBundled runs the test suites of the bundled programs on the
// original and on each repacked variant of the program they embed.
func TestExecuTorchBundled(t *testing.T) {
	py := Python(t)
	d := testmodels.Dir(t)
	dir := t.TempDir()
	// testdata/tiny.bpte is left out: it embeds testdata/tiny.pte, which
	// the runtime does not run (tinyCannot).
	files := map[string]string{"bundled-program": filepath.Join(d, "pte", "bundled-program.bpte")}
	names := []string{"bundled-program"}
	var job []map[string]string
	for _, n := range names {
		job = append(job, map[string]string{"name": n, "bpte": files[n], "extract_to": filepath.Join(dir, n+".pte")})
	}
	var first struct{ Runs []bundledResult }
	Driver(t, py, "bundled", map[string]any{"runs": job}, &first)
	// Repack each .bpte whole if edgeload can; the embedded program in any
	// case, put back into the bundle by the driver.
	job = nil
	programs := map[string]string{} // run name: the repacked program it embeds
	for _, n := range names {
		out := filepath.Join(dir, n+".align.bpte")
		if msg, ok := Repack(t, "--align", "16KiB", files[n], out); ok {
			job = append(job, map[string]string{"name": n + "/bpte-align-16KiB", "bpte": out})
		} else {
			t.Logf("%s: edgeload repack of the .bpte itself: %s (the program it embeds is repacked instead)", n, msg)
		}
		for _, v := range []struct{ name, flag string }{{"align-16KiB", "--align"}, {"tensor-align-16KiB", "--tensor-align"}} {
			prog := filepath.Join(dir, n+"."+v.name+".pte")
			if msg, ok := Repack(t, v.flag, "16KiB", filepath.Join(dir, n+".pte"), prog); !ok {
				t.Errorf("%s: repack %s: %s", n, v.flag, msg)
				continue
			}
			job = append(job, map[string]string{"name": n + "/" + v.name, "bpte": files[n], "program": prog})
			programs[n+"/"+v.name] = prog
		}
	}
	var second struct{ Runs []bundledResult }
	Driver(t, py, "bundled", map[string]any{"runs": job}, &second)
	orig := map[string]bundledResult{}
	for _, r := range first.Runs {
		orig[r.Name] = r
		if r.LoadError != "" || len(r.Cases) == 0 {
			t.Errorf("%s: load error %q, %d test cases", r.Name, r.LoadError, len(r.Cases))
			continue
		}
		failed := 0
		for _, c := range r.Cases {
			if !c.OK || !c.Exact {
				failed++
				t.Errorf("%s: original: test case %s[%d]: ok=%v exact=%v %s", r.Name, c.Method, c.Index, c.OK, c.Exact, c.Error)
			}
		}
		if failed == 0 {
			t.Logf("%s: its %d bundled test cases pass on the original", r.Name, len(r.Cases))
		}
	}
	for _, r := range second.Runs {
		o := orig[strings.SplitN(r.Name, "/", 2)[0]]
		if prog := programs[r.Name]; prog != "" {
			// the repacked program against the one the bundle embeds
			if d := CheckSays(File{Path: filepath.Join(dir, strings.SplitN(r.Name, "/", 2)[0]+".pte")}, File{Path: prog}); d != "" {
				t.Errorf("%s: repack --check against the embedded program: %s", r.Name, d)
			}
		}
		if r.ProgramSHA256 == o.EmbeddedSHA256 {
			t.Errorf("%s: the bundle still holds the original program", r.Name)
		}
		if r.LoadError != "" || len(r.Cases) != len(o.Cases) {
			t.Errorf("%s: load error %q, %d test cases, want %d", r.Name, r.LoadError, len(r.Cases), len(o.Cases))
			continue
		}
		failed := 0
		for i, c := range r.Cases {
			if !c.OK || !c.Exact || !reflect.DeepEqual(c.Outputs, o.Cases[i].Outputs) {
				failed++
				t.Errorf("%s: test case %s[%d]: ok=%v exact=%v %s; outputs %+v, original %+v", r.Name, c.Method, c.Index, c.OK, c.Exact, c.Error, c.Outputs, o.Cases[i].Outputs)
			}
		}
		if failed == 0 {
			t.Logf("%s: its %d bundled test cases pass, outputs bit-identical to the original's; repack --check: no difference", r.Name, len(r.Cases))
		}
	}
}

// inspectTensor returns the absolute offset and size of tensor name in a
// file, from `edgeload inspect --json`.
func inspectTensor(t *testing.T, file, name string) (int64, int64) {
	t.Helper()
	out, err := exec.Command(Edgeload(t), "inspect", "--json", file).Output()
	if err != nil {
		t.Fatalf("inspect %s: %v", file, err)
	}
	var m testmodels.Expected
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	for _, tn := range m.Tensors {
		if tn.Name == name && tn.Offset != nil {
			return *tn.Offset, tn.NBytes
		}
	}
	t.Fatalf("%s: no tensor %q in %s", file, name, out)
	return 0, 0
}

// TestBrokenRepackFails shows that the checks catch a wrong file: a
// repacked program whose extended header names a segment base 16 bytes off
// (the alignment written wrong) and one whose first weight is shifted by 4
// bytes inside its aligned slot both give other outputs in the runtime and
// a difference in repack --check, while the good repack gives none.
func TestBrokenRepackFails(t *testing.T) {
	py := Python(t)
	dir := t.TempDir()
	src := filepath.Join(testmodels.Root(), "testdata", "executorch", "mlp.pte")
	good := filepath.Join(dir, "good.pte")
	if msg, ok := Repack(t, "--tensor-align", "16KiB", src, good); !ok {
		t.Fatal(msg)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if string(b[8:12]) != "eh00" {
		t.Fatalf("no extended header in %s", good)
	}
	// Extended header: segment_base_offset is the uint64 at 24.
	base := binary.LittleEndian.Uint64(b[24:32])
	if base%16384 != 0 {
		t.Fatalf("segment base %d is not 16 KiB-aligned", base)
	}
	header := slices.Clone(b)
	binary.LittleEndian.PutUint64(header[24:32], base-16)
	// The first weight of fc1 (16x32 float32, 2048 bytes), by its place in
	// the values of forward.
	off, n := inspectTensor(t, good, "forward/values/0")
	if off%16384 != 0 || n != 2048 {
		t.Fatalf("forward/values/0 at %d, %d bytes: want 2048 bytes 16 KiB-aligned", off, n)
	}
	shifted := slices.Clone(b)
	copy(shifted[off+4:off+n], b[off:off+n-4])
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	runs := []PTERun{
		{Name: "original", Program: src, Iterations: 1},
		{Name: "good", Program: good, Iterations: 1},
		{Name: "wrong-segment-base", Program: write("header.pte", header), Iterations: 1},
		{Name: "shifted-tensor", Program: write("shifted.pte", shifted), Iterations: 1},
	}
	var res struct{ Runs []Run }
	Driver(t, py, "pte", map[string]any{"runs": runs}, &res)
	if len(res.Runs) != 4 {
		t.Fatalf("%d runs reported", len(res.Runs))
	}
	orig := res.Runs[0]
	if len(orig.Ran()) != 1 {
		t.Fatalf("the original ran %q", orig.Ran())
	}
	if d := Compare(orig, res.Runs[1]); len(d) > 0 {
		t.Errorf("good repack differs: %q", d)
	}
	for i, r := range res.Runs[2:] {
		d := Compare(orig, r)
		if len(d) == 0 {
			t.Errorf("%s: the runtime gives the original's results", r.Name)
		}
		said := CheckSays(File{Path: src}, File{Path: runs[2+i].Program})
		if said == "" {
			t.Errorf("%s: repack --check finds no difference", r.Name)
		}
		if len(d) > 0 && said != "" {
			t.Logf("%s: caught by the runtime (%s) and by repack --check (%s)", r.Name, clip(d[0], 160), clip(said, 200))
		}
	}
}

// TestProgramLoadAnchor times ExecuTorch's Program::load through its
// Python bindings and edgeload's loader.Open of the same files and logs
// both (go test -run TestProgramLoadAnchor -v); it asserts no timing.
func TestProgramLoadAnchor(t *testing.T) {
	py := Python(t)
	d := testmodels.Dir(t)
	files := []string{
		filepath.Join(d, "pte", "arduino-add.pte"),
		filepath.Join(d, "pte", "arduino-keyword-spotting.pte"),
		filepath.Join(d, "pte", "stories260k-qnn.pte"),
		filepath.Join(testmodels.Root(), "testdata", "executorch", "conv.pte"),
	}
	const n = 200
	var job []map[string]string
	for _, f := range files {
		job = append(job, map[string]string{"name": filepath.Base(f), "program": f})
	}
	var res struct {
		Runs []struct {
			Name         string `json:"name"`
			Minimal      int64  `json:"program_load_Minimal_ns"`
			InternalCons int64  `json:"program_load_InternalConsistency_ns"`
		}
		Overhead int64 `json:"binding_call_overhead_ns"`
	}
	Driver(t, py, "time-load", map[string]any{"runs": job, "iterations": n}, &res)
	if len(res.Runs) != len(files) {
		t.Fatalf("%d timings for %d files", len(res.Runs), len(files))
	}
	t.Logf("median of %d runs; the bindings' own overhead (a call that does nothing) is %d ns", n, res.Overhead)
	t.Logf("%-30s %22s %30s %18s", "file", "Program::load Minimal", "Program::load InternalConsist.", "loader.Open+Close")
	for i, f := range files {
		samples := make([]time.Duration, n)
		for j := range samples {
			t0 := time.Now()
			m, err := loader.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			m.Close()
			samples[j] = time.Since(t0)
		}
		slices.Sort(samples)
		r := res.Runs[i]
		t.Logf("%-30s %19d ns %27d ns %15d ns", r.Name, r.Minimal, r.InternalCons, samples[n/2].Nanoseconds())
	}
}
