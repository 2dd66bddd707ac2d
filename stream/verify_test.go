package stream

import (
	"cmp"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/signing"
)

// signedStream opens the model at path and streams it checked against the
// OMS signature sig (signed with ../shared/models/oms/keys/ec-p256).
func signedStream(t *testing.T, path, sig string, r Reader, opts ...Option) (*loader.Model, *Stream) {
	return signedStreamMode(t, path, sig, r, mmapfile.ModeAuto, opts...)
}

// signedStreamMode is signedStream with the model mapped in mode.
func signedStreamMode(t *testing.T, path, sig string, r Reader, mode mmapfile.Mode, opts ...Option) (*loader.Model, *Stream) {
	t.Helper()
	m, checks := signedModel(t, path, sig, mode)
	return m, newPasses(t, m, r, append(opts, WithSignature(checks))...)
}

// signedModel opens the model at path, mapped in mode, and returns it with
// the check of its file against the OMS signature sig.
func signedModel(t *testing.T, path, sig string, mode mmapfile.Mode) (*loader.Model, map[*mmapfile.File]*signing.Check) {
	t.Helper()
	man := verifiedManifest(t, sig, filepath.Join(filepath.Dir(filepath.Dir(sig)), "keys", "ec-p256.pub.pem"))
	m, err := loader.Open(path, loader.WithMmapOptions(mmapfile.WithMode(mode)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if mode != mmapfile.ModeAuto && m.File().Mode() != mode {
		t.Fatalf("mapped %v, want %v", m.File().Mode(), mode)
	}
	c, err := man.NewCheck(filepath.Base(path), m.Size())
	if err != nil {
		t.Fatal(err)
	}
	return m, map[*mmapfile.File]*signing.Check{m.File(): c}
}

// verifiedManifest returns the manifest of the OMS signature at sig,
// verified with the public key at pub.
func verifiedManifest(t *testing.T, sig, pub string) *signing.Manifest {
	t.Helper()
	b, err := signing.ReadBundle(sig)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(pub)
	if err != nil {
		t.Fatal(err)
	}
	key, err := signing.ParsePublicKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	man, err := b.Verify(&signing.Trust{PublicKey: key})
	if err != nil {
		t.Fatal(err)
	}
	return man
}

// checkpointCopy copies signing/testdata/oms/models/st-index, a sharded
// safetensors checkpoint, into a new folder, with a byte in the middle of
// the file named flip (if any) flipped, and returns the folder.
func checkpointCopy(t *testing.T, flip string) string {
	t.Helper()
	src := filepath.Join("..", "signing", "testdata", "oms", "models", "st-index")
	dir := t.TempDir()
	es, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == flip {
			b[len(b)/2] ^= 1
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Streaming checked against a model's real OMS signature: the intact model
// streams to io.EOF; with a weight byte flipped after signing, the shards
// serialization hands out no item of the shard that holds the byte (nor
// after it) and fails there, and the files serialization fails after the
// last item instead of ending.
func TestSignedStream(t *testing.T) {
	dir := testmodels.Path(t, "oms")
	intact := filepath.Join(dir, "gguf", "llama2-tiny-random.gguf")
	flipped := filepath.Join(dir, "gguf-flipped", "llama2-tiny-random.gguf")
	const flip = 1236416                      // the flipped byte (../shared/models/oms/README.md)
	const shardStart = flip / 100000 * 100000 // the failing shard, of the signature's 100000-byte shards
	for _, mode := range []mmapfile.Mode{mmapfile.ModeWhole, mmapfile.ModeWindowed} {
		for _, r := range readers {
			for _, c := range []struct {
				name, sig string
			}{{"files", "llama2-tiny-random.gguf.key-files.sig"}, {"shards", "llama2-tiny-random.gguf.key-shards-100000.sig"}} {
				signedStreamCase(t, mode, r, c.name, filepath.Join(dir, "gguf", c.sig), intact, flipped, shardStart)
			}
		}
	}
}

// signedStreamCase is one case of TestSignedStream.
func signedStreamCase(t *testing.T, mode mmapfile.Mode, r Reader, name, sig, intact, flipped string, shardStart int64) {
	t.Run(mode.String()+"/"+r.String()+"/"+name, func(t *testing.T) {
		m, s := signedStreamMode(t, intact, sig, r, mode)
		n := 0
		for {
			_, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("intact model, item %d: %v", n, err)
			}
			n++
		}
		if n != m.NumTensors() {
			t.Fatalf("intact model: %d items, %d tensors", n, m.NumTensors())
		}
		// The use order is not the file's, but the checks read
		// from the file only the bytes no tensor holds: the rest
		// they take from the items read.
		if gaps := unheld(m); s.gapRead != gaps {
			t.Errorf("intact model: the checks read %d bytes from the file, want the %d no tensor holds", s.gapRead, gaps)
		}

		// In file order, so that items lie before the failing shard.
		byOffset := make([]int, m.NumTensors())
		for i := range byOffset {
			byOffset[i] = i
		}
		slices.SortFunc(byOffset, func(a, b int) int { return cmp.Compare(m.TensorData(a).Offset(), m.TensorData(b).Offset()) })
		m, s = signedStreamMode(t, flipped, sig, r, mode, WithOrder(byOffset))
		var got []Item
		var err error
		for {
			var it Item
			it, err = s.Next()
			if err != nil {
				break
			}
			got = append(got, it)
		}
		if !errors.Is(err, ErrSignature) {
			t.Fatalf("flipped model: %v after %d items, want ErrSignature", err, len(got))
		}
		var se *signing.Error
		if !errors.As(err, &se) {
			t.Fatalf("flipped model: %v names no file or range", err)
		}
		switch name {
		case "files":
			// The verdict comes with the file's last byte: the items
			// read before it may have been handed out, the last not.
			if len(got) >= m.NumTensors() {
				t.Fatalf("files: %d items handed out, the file's last among them", len(got))
			}
		case "shards":
			for _, it := range got {
				if end := it.Data.Offset() + it.Data.Len(); end > shardStart {
					t.Fatalf("shards: %s [%d, %d) handed out, past the start of the failing shard at %d", it.Name, it.Data.Offset(), end, shardStart)
				}
			}
			want := 0 // the items wholly before the failing shard
			for _, i := range byOffset {
				if d := m.TensorData(i); d.Offset()+d.Len() > shardStart {
					break
				}
				want++
			}
			if len(got) != want {
				t.Fatalf("shards: %d items handed out, want the %d before the failing shard", len(got), want)
			}
		}
		t.Logf("%s: %d items, then %v", name, len(got), err)
	})
}

// unheld returns how many bytes of m's file no tensor holds.
func unheld(m *loader.Model) int64 {
	type r struct{ a, b int64 }
	var rs []r
	for i := range m.NumTensors() {
		d := m.TensorData(i)
		rs = append(rs, r{d.Offset(), d.Offset() + d.Len()})
	}
	slices.SortFunc(rs, func(x, y r) int { return cmp.Compare(x.a, y.a) })
	var held, end int64
	for _, x := range rs {
		if x.b > end {
			held += x.b - max(x.a, end)
			end = x.b
		}
	}
	return m.Size() - held
}

// Every budget New accepts with a shards signature streams the intact model
// to the end and the flipped one to ErrSignature: the items held unproven,
// the item the caller holds and a shard's tail beyond what the room admits
// must not stall the stream.
func TestSignedStreamTightBudget(t *testing.T) {
	dir := testmodels.Path(t, "oms")
	sig := filepath.Join(dir, "gguf", "llama2-tiny-random.gguf.key-shards-100000.sig")
	for _, r := range readers {
		for _, c := range []struct {
			path string
			want error
		}{
			{filepath.Join(dir, "gguf", "llama2-tiny-random.gguf"), io.EOF},
			{filepath.Join(dir, "gguf-flipped", "llama2-tiny-random.gguf"), ErrSignature},
		} {
			accepted := 0
			for budget := int64(160 << 10); budget <= 1<<20; budget += 4 << 10 {
				m, checks := signedModel(t, c.path, sig, mmapfile.ModeAuto)
				s, err := New(context.Background(), m, WithReader(r), WithBudget(budget), WithSignature(checks))
				if errors.Is(err, ErrBudget) {
					continue
				}
				if r == ReadDirect && errors.Is(err, errors.ErrUnsupported) {
					skipUnlessRequired(t, "no direct I/O here: %v", err)
				}
				if err != nil {
					t.Fatal(err)
				}
				accepted++
				done := make(chan error, 1)
				go func() {
					for {
						if _, err := s.Next(); err != nil {
							done <- err
							return
						}
					}
				}()
				select {
				case err := <-done:
					if !errors.Is(err, c.want) {
						t.Errorf("%s, %v reader, budget %d: %v, want %v", c.path, r, budget, err, c.want)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("%s, %v reader, budget %d: no item for 10 s (stats %+v)", c.path, r, budget, s.Stats())
				}
				s.Close()
			}
			if accepted == 0 {
				t.Fatalf("%v reader: no budget accepted", r)
			}
		}
	}
}

// A signature's shards must fit in the room: a budget that cannot hold one
// is an error that says so.
func TestSignedStreamBudget(t *testing.T) {
	dir := testmodels.Path(t, "oms")
	path := filepath.Join(dir, "gguf", "llama2-tiny-random.gguf")
	m, err := loader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, s := signedStream(t, path, filepath.Join(dir, "gguf", "llama2-tiny-random.gguf.key-shards-100000.sig"), ReadMapped)
	s.Close()
	if _, err := New(context.Background(), m, WithBudget(128<<10), WithSignature(map[*mmapfile.File]*signing.Check{m.File(): nil})); err == nil {
		t.Fatal("a nil check was accepted")
	}
	if _, err := New(context.Background(), m, WithPasses(2), WithSignature(map[*mmapfile.File]*signing.Check{})); err == nil {
		t.Fatal("a signature with passes was accepted")
	}
}

// The same on a sharded safetensors checkpoint signed with 1000-byte shards
// (signing/testdata/oms: model-signing 1.1.1's), copied with a byte of its
// second shard file flipped: every item of the first file and those of the
// second before its failing shard [1000, 2000) are handed out, none after.
func TestSignedStreamShardedCheckpoint(t *testing.T) {
	dir := checkpointCopy(t, "model-00002-of-00002.safetensors")
	oms := filepath.Join("..", "signing", "testdata", "oms")
	man := verifiedManifest(t, filepath.Join(oms, "st-shards.sig"), filepath.Join(oms, "keys", "ec-p384.pub.pem"))
	for _, r := range readers {
		t.Run(r.String(), func(t *testing.T) {
			m, err := loader.Open(filepath.Join(dir, "model.safetensors.index.json"))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			checks := make(map[*mmapfile.File]*signing.Check)
			for _, f := range m.Impl().(format.MultiFile).Files() {
				c, err := man.NewCheck(filepath.Base(f.Name()), f.Len())
				if err != nil {
					t.Fatal(err)
				}
				checks[f] = c
			}
			s := newPasses(t, m, r, WithSignature(checks))
			var got []Item
			for {
				it, err := s.Next()
				if err != nil {
					if !errors.Is(err, ErrSignature) {
						t.Fatalf("after %d items: %v, want ErrSignature", len(got), err)
					}
					break
				}
				got = append(got, it)
			}
			second := 0
			want := 0
			for i := range m.NumTensors() {
				d := m.TensorData(i)
				if filepath.Base(d.File().Name()) != "model-00002-of-00002.safetensors" {
					want++
				} else if d.Offset()+d.Len() <= 1000 {
					want++
					second++
				}
			}
			for _, it := range got {
				if filepath.Base(it.Data.File().Name()) == "model-00002-of-00002.safetensors" && it.Data.Offset()+it.Data.Len() > 1000 {
					t.Fatalf("%s [%d, +%d) of the second file handed out, past its good shard", it.Name, it.Data.Offset(), it.Data.Len())
				}
			}
			if len(got) != want {
				t.Fatalf("%d items handed out, want %d (%d of the second file)", len(got), want, second)
			}
		})
	}
}

// SignatureChecks pairs each file the model maps with its check, checks
// whole the signed files it does not map, and refuses a model whose
// unmapped file changed or whose folder holds an unsigned file.
func TestSignatureChecks(t *testing.T) {
	oms := filepath.Join("..", "signing", "testdata", "oms")
	man := verifiedManifest(t, filepath.Join(oms, "st-shards.sig"), filepath.Join(oms, "keys", "ec-p384.pub.pem"))
	for _, c := range []struct {
		name  string
		flip  string // a file with a byte flipped, its size kept
		add   string // a file added
		want  error  // nil: the checks are made
		named string // the file the error names
	}{
		{"intact", "", "", nil, ""},
		{"config changed", "config.json", "", signing.ErrDigest, "config.json"},
		{"file added", "", "README.md", signing.ErrUnsigned, "README.md"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := checkpointCopy(t, c.flip)
			if c.add != "" {
				if err := os.WriteFile(filepath.Join(dir, c.add), []byte("# tiny\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			m, err := loader.Open(filepath.Join(dir, "model.safetensors.index.json"))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			checks, err := SignatureChecks(m, man, nil)
			if c.want != nil {
				if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.named) {
					t.Fatalf("%v, want %v naming %s", err, c.want, c.named)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for f, ck := range checks {
				if ck.File != filepath.Base(f.Name()) || ck.Size != f.Len() {
					t.Errorf("%s paired with the check of %s (%d bytes)", f.Name(), ck.File, ck.Size)
				}
				got = append(got, ck.File)
			}
			slices.Sort(got)
			want := []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json"}
			if !slices.Equal(got, want) {
				t.Fatalf("checks for %v, want %v", got, want)
			}
		})
	}
}
