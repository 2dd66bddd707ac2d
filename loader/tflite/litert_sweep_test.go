package tflite_test

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/tflitegen"
	"github.com/edgeload/edgeload/loader/tflite"
	"github.com/edgeload/edgeload/mmapfile"
)

// mutation is one change of a file: bytes written at an offset, or a cut.
type mutation struct {
	off  int
	data []byte
	cut  int // > 0: the file's first cut bytes instead
}

func (mu mutation) apply(base []byte) []byte {
	if mu.cut > 0 {
		return base[:mu.cut]
	}
	b := append([]byte(nil), base...)
	copy(b[mu.off:], mu.data)
	return b
}

func (mu mutation) String() string {
	if mu.cut > 0 {
		return fmt.Sprintf("cut %d", mu.cut)
	}
	return fmt.Sprintf("%d %s", mu.off, hex.EncodeToString(mu.data))
}

// mutations lists changes of base's FlatBuffer region that exercise the
// verifier: at every 4-aligned word, offsets and lengths moved, zeroed,
// misaligned, negative or huge; at every even position, a vtable entry or
// size zeroed, made odd, moved or huge; at every byte, a flipped low or
// high bit; and cuts. The bodies of inline buffers (skip) are left alone:
// nothing in them is structure. With budget > 0, an evenly spread subset
// of about budget changes.
func mutations(base []byte, skip func(int) bool, budget int) []mutation {
	var all []mutation
	u32 := func(p int, v uint32) {
		b := make([]byte, 4)
		binary.LittleEndian.PutUint32(b, v)
		all = append(all, mutation{off: p, data: b})
	}
	u16 := func(p int, v uint16) {
		all = append(all, mutation{off: p, data: []byte{byte(v), byte(v >> 8)}})
	}
	for p := range base {
		if skip(p) {
			continue
		}
		if p%4 == 0 && p+4 <= len(base) {
			old := binary.LittleEndian.Uint32(base[p:])
			for _, v := range []uint32{0, old + 4, old - 4, old + 1, old + 2, old + 8, old ^ 1<<31, 0xffffffff} {
				u32(p, v)
			}
		}
		if p%2 == 0 && p+2 <= len(base) {
			old := binary.LittleEndian.Uint16(base[p:])
			for _, v := range []uint16{0, 1, 2, old + 2, old - 2, old ^ 1, 0xfffe} {
				u16(p, v)
			}
		}
		for _, v := range []byte{base[p] ^ 1, base[p] ^ 0x80, 0xff} {
			all = append(all, mutation{off: p, data: []byte{v}})
		}
	}
	for n := 8; n < len(base); n += max(1, len(base)/64) {
		all = append(all, mutation{cut: n})
	}
	for n := max(8, len(base)-16); n < len(base); n++ {
		all = append(all, mutation{cut: n})
	}
	if budget <= 0 || len(all) <= budget {
		return all
	}
	// Every k-th change; k is odd, so that the values at a position
	// (up to 18 of them) are not always the same ones.
	k := len(all)/budget | 1
	var some []mutation
	for i := 0; i < len(all); i += k {
		some = append(some, all[i])
	}
	return some
}

// liteRT runs testdata/litert_verify.py over the mutations of the file at
// path and returns its verdict for each ("ok", "flatbuffer", "build ...",
// or "crash" where the interpreter's process died on that change; the
// rest then run in a new process).
func liteRT(t *testing.T, path string, muts []mutation) []string {
	var out []string
	for len(out) < len(muts) {
		cmd := exec.Command("python3", filepath.Join("testdata", "litert_verify.py"), path)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = io.Discard // LiteRT's error reporter writes there too
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		rest := muts[len(out):]
		go func() {
			w := bufio.NewWriter(stdin)
			for _, mu := range rest {
				fmt.Fprintln(w, mu)
			}
			w.Flush()
			stdin.Close()
		}()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		n := 0
		for sc.Scan() {
			out = append(out, sc.Text())
			n++
		}
		err = cmd.Wait()
		if len(out) < len(muts) {
			if n == 0 && len(out) == 0 && err != nil {
				t.Fatalf("litert_verify.py %s: %v", path, err)
			}
			out = append(out, "crash")
		}
	}
	return out
}

// liteRTPython skips the test where python3 with ai_edge_litert is not
// installed, and fails it then under CI=true.
func liteRTPython(t *testing.T) {
	missing := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %s", why)
		}
		t.Skip(why + ": skipping the comparison with LiteRT's verifier")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		missing("no python3")
	}
	if err := exec.Command("python3", "-c", "import ai_edge_litert.interpreter").Run(); err != nil {
		missing("no ai_edge_litert (pip install -r requirements-test.txt)")
	}
}

// TestLiteRTVerifierSweep: for mutations of every real .tflite and of the
// generated sample in both layouts, edgeload's FlatBuffer verification
// refuses exactly what the FlatBuffer verifier LiteRT runs
// (Interpreter(model_content=...): flatbuffers::Verifier over the whole
// file) refuses; what opens passes exercise; and every refusal message is
// of a known family and its numbers make its claim true
// (hostile.Contradiction). Of the mutations LiteRT builds an interpreter
// from, edgeload refuses those whose meaning it checks at Open and LiteRT's
// builder does not (indices out of range, buffers of the wrong size): the
// log counts them. EDGELOAD_LITERT_SWEEP=full sweeps every mutation
// instead of about 3,000 a file (600 under the race detector).
func TestLiteRTVerifierSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	liteRTPython(t)
	budget := 3000
	if hostile.Slow() {
		budget = 600 // under the race detector or an emulator
	}
	if os.Getenv("EDGELOAD_LITERT_SWEEP") == "full" {
		budget = 0
	}
	files := testmodels.Files(t, "tflite")
	dir := t.TempDir()
	for _, ext := range []bool{false, true} {
		p := filepath.Join(dir, fmt.Sprintf("sample-external-%v.tflite", ext))
		if err := os.WriteFile(p, tflitegen.Sample(ext).Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			base, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			m, err := tflite.NewFile(mmapfile.NewBytes(base))
			if err != nil {
				t.Fatal(err)
			}
			// The bodies of inline buffers, their length words aside.
			body := make([]bool, len(base))
			for _, b := range m.Buffers() {
				if b.Kind == tflite.BufferInline {
					for p := b.Data.Offset(); p < b.Data.Offset()+b.Data.Len(); p++ {
						body[p] = true
					}
				}
			}
			region := int(m.FlatBufferLen())
			muts := mutations(base[:region], func(p int) bool { return body[p] }, budget)
			verdicts := liteRT(t, path, muts)
			count := map[string]int{}
			for i, mu := range muts {
				lite := verdicts[i]
				b := mu.apply(base)
				serr := tflite.VerifyRegion(mmapfile.NewBytes(b))
				m, err := tflite.NewFile(mmapfile.NewBytes(b))
				if err == nil {
					if xerr := exercise(m); xerr != nil {
						t.Errorf("%s: opened, but %v", mu, xerr)
					}
				}
				if err != nil {
					if known, problem := hostile.Contradiction(err); !known || problem != "" {
						t.Errorf("%s: message %q: known %v, contradicts itself: %q", mu, err, known, problem)
					}
				}
				kind, _, _ := strings.Cut(lite, " ")
				count[kind]++
				switch {
				case kind == "flatbuffer" && serr == nil:
					t.Errorf("%s: LiteRT's verifier refuses it, edgeload's accepts it", mu)
				case (kind == "ok" || kind == "build") && serr != nil:
					t.Errorf("%s: LiteRT's verifier accepts it, edgeload's refuses it: %v", mu, serr)
				case kind == "ok" && err != nil:
					// A meaning edgeload checks at Open and LiteRT's
					// builder does not (an index out of range, a buffer
					// of the wrong size): edgeload hands out no index
					// or view it has not checked.
					count["ok, refused by edgeload"]++
				}
			}
			t.Logf("%d mutations: %v", len(muts), count)
		})
	}
}
