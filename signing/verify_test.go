package signing

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/omscases"
)

// statement builds the JSON of an OMS statement signing files (name to
// bytes) with the given serialization (shardSize 0: files); edit, when
// not nil, changes the decoded statement before it is encoded.
func statement(t testing.TB, files map[string][]byte, names []string, shardSize int64, edit func(st map[string]any)) []byte {
	t.Helper()
	var res []any
	root := sha256.New()
	add := func(name string, data []byte) {
		sum := sha256.Sum256(data)
		alg := "sha256"
		if shardSize > 0 {
			alg = fmt.Sprintf("sha256-sharded-%d", shardSize)
		}
		res = append(res, map[string]any{"name": name, "algorithm": alg, "digest": hex.EncodeToString(sum[:])})
		root.Write(sum[:])
	}
	for _, n := range names {
		data := files[n]
		if shardSize == 0 {
			add(n, data)
			continue
		}
		for s := int64(0); s < int64(len(data)); s += shardSize {
			e := min(s+shardSize, int64(len(data)))
			add(fmt.Sprintf("%s:%d:%d", n, s, e), data[s:e])
		}
	}
	ser := map[string]any{"method": "files", "hash_type": "sha256", "allow_symlinks": false, "ignore_paths": []any{".git"}}
	if shardSize > 0 {
		ser["method"], ser["shard_size"] = "shards", float64(shardSize)
	}
	st := map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"name": "model", "digest": map[string]any{"sha256": hex.EncodeToString(root.Sum(nil))}}},
		"predicateType": "https://model_signing/signature/v1.0",
		"predicate":     map[string]any{"serialization": ser, "resources": res},
	}
	if edit != nil {
		edit(st)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeModel writes files into a new folder and returns it.
func writeModel(t testing.TB, files map[string][]byte) string {
	dir := t.TempDir()
	for n, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// randBytes returns n reproducible bytes.
func randBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestFirstFailure checks that with several bad files, the error always
// names the first in the model's order, whatever the workers do.
func TestFirstFailure(t *testing.T) {
	files := map[string][]byte{}
	var names []string
	for i := range 12 {
		n := fmt.Sprintf("f%02d.bin", i)
		files[n] = randBytes(300_000+i*1000, uint64(i))
		names = append(names, n)
	}
	for _, shard := range []int64{0, 64 << 10} {
		m, err := parseStatement(statement(t, files, names, shard, nil))
		if err != nil {
			t.Fatal(err)
		}
		files["f03.bin"][290_000] ^= 1
		files["f07.bin"][5] ^= 1
		files["f11.bin"][200_000] ^= 1
		dir := writeModel(t, files)
		for _, workers := range []int{1, 2, 3, 8} {
			for range 5 {
				md, err := m.Model(dir)
				if err != nil {
					t.Fatal(err)
				}
				_, err = m.VerifyModel(context.Background(), md, &Options{Workers: workers})
				var e *Error
				if !errors.As(err, &e) || e.File != "f03.bin" || !errors.Is(err, ErrDigest) {
					t.Fatalf("shard size %d, %d workers: %v, want f03.bin's digest", shard, workers, err)
				}
				if end := min(5*shard, 303_000); shard > 0 && (e.Start != 4*shard || e.End != end) {
					t.Fatalf("%v, want shard [%d, %d)", err, 4*shard, end)
				}
			}
		}
		files["f03.bin"][290_000] ^= 1
		files["f07.bin"][5] ^= 1
		files["f11.bin"][200_000] ^= 1
	}
}

// TestVerifyProgress checks that Progress sees every byte hashed, once.
func TestVerifyProgress(t *testing.T) {
	files := map[string][]byte{"a": randBytes(1<<20+7, 1), "b": randBytes(3, 2), "c": nil}
	m, err := parseStatement(statement(t, files, []string{"a", "b", "c"}, 0, nil))
	if err != nil {
		t.Fatal(err)
	}
	md, err := m.Model(writeModel(t, files))
	if err != nil {
		t.Fatal(err)
	}
	var last, total int64
	res, err := m.VerifyModel(context.Background(), md, &Options{Workers: 3, Progress: func(d, n int64) {
		if d < last {
			t.Errorf("progress went back from %d to %d", last, d)
		}
		last, total = d, n
	}})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(1<<20 + 10); last != want || total != want || res.Bytes != want || res.Files != 3 {
		t.Errorf("progress %d of %d, result %d bytes %d files; want %d of %d", last, total, res.Bytes, res.Files, want, want)
	}
}

// TestVerifyCanceled checks that a canceled context stops verification.
func TestVerifyCanceled(t *testing.T) {
	files := map[string][]byte{"a": randBytes(4<<20, 3)}
	m, err := parseStatement(statement(t, files, []string{"a"}, 0, nil))
	if err != nil {
		t.Fatal(err)
	}
	md, err := m.Model(writeModel(t, files))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.VerifyModel(ctx, md, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("%v, want context.Canceled", err)
	}
}

// TestCheck feeds a shard bundle's model to Check in uneven pieces: each
// shard is proven when its last byte arrives, and a flipped byte stops
// the check at the end of its shard, before any later byte is proven.
func TestCheck(t *testing.T) {
	dir := omscases.Dir(t)
	for _, sig := range []string{"key-shards-100000", "key-files"} {
		b, err := ReadBundle(filepath.Join(dir, "gguf", "llama2-tiny-random.gguf."+sig+".sig"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := b.Statement()
		if err != nil {
			t.Fatal(err)
		}
		for _, model := range []string{"gguf", "gguf-flipped"} {
			data, err := os.ReadFile(filepath.Join(dir, model, "llama2-tiny-random.gguf"))
			if err != nil {
				t.Fatal(err)
			}
			c, err := m.NewCheck("llama2-tiny-random.gguf", int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			shards := sig == "key-shards-100000"
			if want := map[bool]int{true: 18, false: 1}[shards]; len(c.Ranges) != want {
				t.Fatalf("%d ranges, want %d", len(c.Ranges), want)
			}
			r := rand.New(rand.NewPCG(7, 7))
			var fed int64
			var werr error
			for fed < int64(len(data)) && werr == nil {
				k := min(int64(r.IntN(70_000)+1), int64(len(data))-fed)
				var n int
				n, werr = c.Write(data[fed : fed+k])
				fed += int64(n)
				v := c.Verified()
				switch {
				case v > fed:
					t.Fatalf("verified %d of %d bytes fed", v, fed)
				case shards && werr == nil && v != fed-fed%100_000 && fed != int64(len(data)):
					t.Fatalf("%d bytes fed, %d verified, want every whole shard", fed, v)
				case !shards && fed < int64(len(data)) && v != 0:
					t.Fatalf("files: %d verified before the last byte", v)
				}
			}
			cerr := c.Close()
			if model == "gguf" {
				if werr != nil || cerr != nil || c.Verified() != int64(len(data)) {
					t.Fatalf("%s %s: %v %v, verified %d", sig, model, werr, cerr, c.Verified())
				}
				continue
			}
			// The flipped byte is at 1236416, in shard [1200000, 1300000).
			var e *Error
			if !errors.As(werr, &e) || !errors.Is(cerr, ErrDigest) {
				t.Fatalf("%s %s: %v %v, want a digest error", sig, model, werr, cerr)
			}
			if shards && (fed != 1_300_000 || c.Verified() != 1_200_000 || e.Start != 1_200_000 || e.End != 1_300_000) {
				t.Errorf("fed %d, verified %d, error %v; want the check to stop after shard [1200000, 1300000)", fed, c.Verified(), werr)
			}
			if !shards && (fed != int64(len(data)) || c.Verified() != 0) {
				t.Errorf("files: fed %d, verified %d", fed, c.Verified())
			}
			if _, err := c.Write([]byte{0}); !errors.Is(err, ErrDigest) {
				t.Errorf("a write after the failure: %v", err)
			}
		}
	}
}

// TestCheckSizes checks the file sizes Check refuses, and bytes past the end.
func TestCheckSizes(t *testing.T) {
	files := map[string][]byte{"w.bin": randBytes(2500, 4), "e": nil}
	m, err := parseStatement(statement(t, files, []string{"w.bin"}, 1000, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int64{2499, 2501, 0} {
		if _, err := m.NewCheck("w.bin", size); !errors.Is(err, ErrDigest) {
			t.Errorf("size %d: %v, want ErrDigest", size, err)
		}
	}
	if _, err := m.NewCheck("other.bin", 10); !errors.Is(err, ErrUnsigned) {
		t.Errorf("an unsigned file: %v", err)
	}
	c, err := m.NewCheck("w.bin", 2500)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(c, bytes.NewReader(append(files["w.bin"], 0))); !errors.Is(err, ErrDigest) || n != 2500 || c.Verified() != 2500 {
		t.Errorf("one byte too many: %d %v, verified %d", n, err, c.Verified())
	}
	c, _ = m.NewCheck("w.bin", 2500)
	c.Write(files["w.bin"][:1500])
	if err := c.Close(); !errors.Is(err, ErrMissing) || c.Verified() != 1000 {
		t.Errorf("closed early: %v, verified %d", err, c.Verified())
	}
	fm, err := parseStatement(statement(t, files, []string{"e"}, 0, nil))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := fm.NewCheck("e", 0); err != nil || c.Close() != nil {
		t.Errorf("an empty file: %v", err)
	}
}

// TestStatementMalformed changes one thing in a good statement at a time.
func TestStatementMalformed(t *testing.T) {
	files := map[string][]byte{"a.bin": randBytes(2500, 5), "b.bin": randBytes(10, 6)}
	names := []string{"a.bin", "b.bin"}
	res := func(st map[string]any) []any { return st["predicate"].(map[string]any)["resources"].([]any) }
	ser := func(st map[string]any) map[string]any {
		return st["predicate"].(map[string]any)["serialization"].(map[string]any)
	}
	cases := []struct {
		name  string
		shard int64
		edit  func(st map[string]any)
		want  error
	}{
		{"good files", 0, nil, nil},
		{"good shards", 1000, nil, nil},
		{"no _type", 0, func(st map[string]any) { delete(st, "_type") }, ErrMalformed},
		{"legacy predicate", 0, func(st map[string]any) { st["predicateType"] = "https://model_signing/Digests/v0.1" }, ErrUnsupported},
		{"other predicate", 0, func(st map[string]any) { st["predicateType"] = "https://slsa.dev/provenance/v1" }, ErrMalformed},
		{"two subjects", 0, func(st map[string]any) { st["subject"] = append(st["subject"].([]any), st["subject"].([]any)[0]) }, ErrMalformed},
		{"root digest", 0, func(st map[string]any) { res(st)[0], res(st)[1] = res(st)[1], res(st)[0] }, ErrMalformed},
		{"blake2b", 0, func(st map[string]any) { ser(st)["hash_type"] = "blake2b" }, ErrUnsupported},
		{"md5", 0, func(st map[string]any) { ser(st)["hash_type"] = "md5" }, ErrMalformed},
		{"method", 0, func(st map[string]any) { ser(st)["method"] = "tensors" }, ErrMalformed},
		{"shard size with files", 0, func(st map[string]any) { ser(st)["shard_size"] = 1000 }, ErrMalformed},
		{"no shard size", 1000, func(st map[string]any) { delete(ser(st), "shard_size") }, ErrMalformed},
		{"fractional shard size", 1000, func(st map[string]any) { ser(st)["shard_size"] = 1000.5 }, ErrMalformed},
		{"zero shard size", 1000, func(st map[string]any) { ser(st)["shard_size"] = 0 }, ErrMalformed},
		{"string shard size", 1000, func(st map[string]any) { ser(st)["shard_size"] = "1000" }, ErrMalformed},
		{"other shard size", 1000, func(st map[string]any) { ser(st)["shard_size"] = 2000 }, ErrMalformed},
		{"algorithm", 0, func(st map[string]any) { res(st)[0].(map[string]any)["algorithm"] = "sha512" }, ErrMalformed},
		{"no algorithm", 0, func(st map[string]any) { delete(res(st)[0].(map[string]any), "algorithm") }, ErrMalformed},
		{"upper-case digest", 0, func(st map[string]any) {
			r := res(st)[0].(map[string]any)
			r["digest"] = strings.ToUpper(r["digest"].(string))
		}, ErrMalformed},
		{"short digest", 0, func(st map[string]any) { res(st)[0].(map[string]any)["digest"] = "abcd" }, ErrMalformed},
		{"dot-dot", 0, func(st map[string]any) { res(st)[0].(map[string]any)["name"] = "../a.bin" }, ErrMalformed},
		{"absolute", 0, func(st map[string]any) { res(st)[0].(map[string]any)["name"] = "/a.bin" }, ErrMalformed},
		{"twice", 0, func(st map[string]any) { res(st)[1].(map[string]any)["name"] = "a.bin" }, ErrMalformed},
		{"shard gap", 1000, func(st map[string]any) { res(st)[1].(map[string]any)["name"] = "a.bin:1001:2000" }, ErrMalformed},
		{"shard leading zero", 1000, func(st map[string]any) { res(st)[1].(map[string]any)["name"] = "a.bin:01000:2000" }, ErrMalformed},
		{"shard no range", 1000, func(st map[string]any) { res(st)[1].(map[string]any)["name"] = "a.bin" }, ErrMalformed},
		{"shard backwards", 1000, func(st map[string]any) { res(st)[1].(map[string]any)["name"] = "a.bin:2000:1000" }, ErrMalformed},
		{"case-folded key", 0, func(st map[string]any) { st["PredicateType"] = st["predicateType"]; delete(st, "predicateType") }, ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseStatement(statement(t, files, names, c.shard, c.edit))
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("%v, want %v", err, c.want)
			}
			if err != nil {
				t.Log(err)
			}
		})
	}
}

// TestCheckRange checks a shard bundle's model range by range, in a
// shuffled order, as a reader that jumps about the file would.
func TestCheckRange(t *testing.T) {
	dir := omscases.Dir(t)
	b, err := ReadBundle(filepath.Join(dir, "gguf", "llama2-tiny-random.gguf.key-shards-100000.sig"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := b.Statement()
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{"gguf", "gguf-flipped"} {
		data, err := os.ReadFile(filepath.Join(dir, model, "llama2-tiny-random.gguf"))
		if err != nil {
			t.Fatal(err)
		}
		size := int64(len(data))
		c, err := m.NewCheck("llama2-tiny-random.gguf", size)
		if err != nil {
			t.Fatal(err)
		}
		if f, l := c.Covering(1236416, 1); f != 12 || l != 13 {
			t.Errorf("Covering(1236416, 1) = %d, %d; want 12, 13", f, l)
		}
		if f, l := c.Covering(99_999, 100_002); f != 0 || l != 3 {
			t.Errorf("Covering(99999, 100002) = %d, %d; want 0, 3", f, l)
		}
		order := rand.New(rand.NewPCG(1, 2)).Perm(len(c.Ranges))
		var failed error
		for _, i := range order {
			r := c.Ranges[i]
			err := c.CheckRange(i, bytes.NewReader(data[r.Start:r.End]))
			if model == "gguf-flipped" && i == 12 {
				failed = err
				if !errors.Is(err, ErrDigest) {
					t.Fatalf("range 12 of the flipped file: %v", err)
				}
				break
			}
			if err != nil {
				t.Fatalf("range %d: %v", i, err)
			}
			if !c.Proven(r.Start, r.End-r.Start) {
				t.Errorf("range %d checked and not proven", i)
			}
		}
		if model == "gguf" {
			if c.Verified() != size || !c.Proven(0, size) || c.Close() != nil {
				t.Errorf("verified %d of %d, proven %v, close %v", c.Verified(), size, c.Proven(0, size), c.Close())
			}
			// Writing the file in order now compares nothing again.
			if n, err := c.Write(data); err != nil || n != len(data) {
				t.Errorf("write after the ranges: %d %v", n, err)
			}
			continue
		}
		if failed == nil || c.Proven(1236416, 1) || c.Proven(0, size) {
			t.Errorf("the flipped shard: %v, proven %v", failed, c.Proven(1236416, 1))
		}
		if err := c.CheckRange(0, bytes.NewReader(data)); !errors.Is(err, ErrDigest) {
			t.Errorf("a check after the failure: %v", err)
		}
	}
	c, _ := m.NewCheck("llama2-tiny-random.gguf", 1750560)
	if err := c.CheckRange(0, bytes.NewReader(make([]byte, 10))); !errors.Is(err, ErrMissing) {
		t.Errorf("a short range: %v", err)
	}
	if c.Proven(-1, 5) || c.Proven(1750560, 1) || c.Proven(0, -1) {
		t.Error("bytes outside the file proven")
	}
}

// TestPlan lists a folder model's checks and feeds each file to its own.
func TestPlan(t *testing.T) {
	dir := filepath.Join("testdata", "oms")
	b, err := ReadBundle(filepath.Join(dir, "st-shards.sig"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := b.Statement()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "m")
	copyTree(t, filepath.Join(dir, "models", "st-index"), root)
	os.WriteFile(filepath.Join(root, "README.md"), []byte("x"), 0o644)
	md, err := m.Model(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Plan(md, nil); !errors.Is(err, ErrUnsigned) {
		t.Fatalf("an unsigned file: %v", err)
	}
	p, err := m.Plan(md, &Options{IgnoreUnsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Method != SerializeShards || len(p.Files) != 4 || len(p.Unsigned) != 1 || p.Unsigned[0] != "README.md" {
		t.Fatalf("plan %+v", p)
	}
	ranges := 0
	for _, c := range p.Files {
		data, err := os.ReadFile(filepath.Join(root, c.File))
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(data)) != c.Size {
			t.Errorf("%s: size %d, file %d", c.File, c.Size, len(data))
		}
		if _, err := c.Write(data); err != nil || c.Close() != nil {
			t.Errorf("%s: %v %v", c.File, err, c.Close())
		}
		ranges += len(c.Ranges)
	}
	if ranges != len(m.Resources) {
		t.Errorf("%d ranges, the statement has %d resources", ranges, len(m.Resources))
	}
}

// TestCheckSum checks a shard bundle's model with sums computed outside
// the Check, in a shuffled order: every range of the intact file proves,
// the flipped file's shard 12 fails.
func TestCheckSum(t *testing.T) {
	dir := omscases.Dir(t)
	b, err := ReadBundle(filepath.Join(dir, "gguf", "llama2-tiny-random.gguf.key-shards-100000.sig"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := b.Statement()
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{"gguf", "gguf-flipped"} {
		data, err := os.ReadFile(filepath.Join(dir, model, "llama2-tiny-random.gguf"))
		if err != nil {
			t.Fatal(err)
		}
		c, err := m.NewCheck("llama2-tiny-random.gguf", int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		var failed int = -1
		for _, i := range rand.New(rand.NewPCG(3, 4)).Perm(len(c.Ranges)) {
			r := c.Ranges[i]
			sum := sha256.Sum256(data[r.Start:r.End])
			if err := c.CheckSum(i, sum[:]); err != nil {
				if !errors.Is(err, ErrDigest) {
					t.Fatalf("range %d: %v", i, err)
				}
				failed = i
				break
			}
		}
		switch {
		case model == "gguf" && (failed >= 0 || c.Close() != nil):
			t.Errorf("intact: range %d failed, close %v", failed, c.Close())
		case model == "gguf-flipped" && (failed != 12 || c.Proven(1236416, 1)):
			t.Errorf("flipped: range %d failed, the flipped byte proven %v", failed, c.Proven(1236416, 1))
		}
	}
}
