package signing

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The statement and predicate types OMS v1.0 signs.
const (
	statementType       = "https://in-toto.io/Statement/v1"
	predicateType       = "https://model_signing/signature/v1.0"
	legacyPredicateType = "https://model_signing/Digests/v0.1"
)

// The serialization methods: every file whole, or fixed-size byte ranges.
const (
	SerializeFiles  = "files"
	SerializeShards = "shards"
)

// Manifest is what a signature says about a model: the serialization it
// was hashed with and every file's (or every shard's) digest. Bundle.Verify
// returns it once the signature holds; Bundle.Statement returns it
// unverified, for inspection.
type Manifest struct {
	// Name is the statement's subject name (the model's file or folder
	// name when model-signing signed it); it is informational only.
	Name string
	// Digest is the subject's SHA-256 root digest over every resource's
	// digest, in the order the statement lists them.
	Digest        []byte
	Serialization Serialization
	// Resources are the statement's resources, in its order.
	Resources []Resource

	files map[string]*fileDigests // by Resource.Path
}

// Serialization is how the model was hashed, as the predicate records it.
type Serialization struct {
	Method        string // SerializeFiles or SerializeShards
	HashType      string // the digest algorithm: "sha256"
	ShardSize     int64  // with SerializeShards, the size of every shard but each file's last
	AllowSymlinks bool   // whether the model may hold symbolic links (followed)
	IgnorePaths   []string
}

// Resource is one signed digest: of a whole file, or of one shard of it.
type Resource struct {
	Name   string // as signed: "dir/file", or "dir/file:START:END" for a shard
	Path   string // the file, relative to the model's root ("." for a single-file model)
	Start  int64  // the shard's byte range [Start, End); a whole file has 0 and -1
	End    int64
	Digest []byte
}

// fileDigests is one file's resources, by Start.
type fileDigests struct {
	path   string
	ranges []Resource
}

// Statement parses the bundle's payload without verifying anything: what
// it returns is what the signer claims, and only Verify makes it trusted.
func (b *Bundle) Statement() (*Manifest, error) {
	return parseStatement(b.Payload)
}

// parseStatement parses and checks an in-toto statement carrying the OMS
// v1.0 predicate.
func parseStatement(payload []byte) (*Manifest, error) {
	d := &decoder{op: "statement"}
	st := d.object("", payload)
	if typ := st.str("_type"); typ != statementType {
		d.fail(ErrMalformed, "_type %s, want %s", quoteShort(typ), statementType)
	}
	switch pt := st.str("predicateType"); pt {
	case predicateType:
	case legacyPredicateType:
		d.fail(ErrUnsupported, "predicateType %s is model-signing's pre-1.0 format; re-sign the model with model-signing 1.0 or later", pt)
	default:
		d.fail(ErrMalformed, "predicateType %s, want %s", quoteShort(pt), predicateType)
	}
	subj := st.list("subject")
	if len(subj) != 1 {
		d.fail(ErrMalformed, "subject: %d entries, want 1", len(subj))
		return nil, d.err
	}
	s0 := d.object("subject[0]", subj[0])
	m := &Manifest{Name: s0.str("name")}
	m.Digest = s0.obj("digest").digest("sha256")
	pred := st.obj("predicate")
	m.parseSerialization(pred.obj("serialization"))
	m.parseResources(pred)
	if d.err != nil {
		return nil, d.err
	}
	h := sha256.New()
	for _, r := range m.Resources {
		h.Write(r.Digest)
	}
	if sum := h.Sum(nil); !bytes.Equal(sum, m.Digest) {
		return nil, errorf(d.op, ErrMalformed, "the resources' digests hash to root digest %x, the subject says %x", sum, m.Digest)
	}
	return m, nil
}

// parseSerialization reads predicate.serialization.
func (m *Manifest) parseSerialization(ser object) {
	d, where := ser.d, ser.where
	s := &m.Serialization
	if s.Method = ser.str("method"); s.Method != SerializeFiles && s.Method != SerializeShards {
		d.fail(ErrMalformed, "%s.method %s, want files or shards", where, quoteShort(s.Method))
	}
	switch s.HashType = ser.str("hash_type"); s.HashType {
	case "sha256":
	case "blake2b", "blake3":
		d.fail(ErrUnsupported, "%s.hash_type %s: this verifier computes sha256 only", where, s.HashType)
	default:
		d.fail(ErrMalformed, "%s.hash_type %s, want sha256, blake2b or blake3", where, quoteShort(s.HashType))
	}
	if ser.has("allow_symlinks") && json.Unmarshal(ser.m["allow_symlinks"], &s.AllowSymlinks) != nil {
		d.fail(ErrMalformed, "%s.allow_symlinks: want true or false", where)
	}
	if ser.has("ignore_paths") {
		for i, raw := range ser.list("ignore_paths") {
			var p string
			if json.Unmarshal(raw, &p) != nil {
				d.fail(ErrMalformed, "%s.ignore_paths[%d]: want a string", where, i)
			}
			s.IgnorePaths = append(s.IgnorePaths, p)
		}
	}
	switch {
	case s.Method == SerializeShards && !ser.has("shard_size"):
		d.fail(ErrMalformed, "%s: shards without a shard_size", where)
	case s.Method == SerializeFiles && ser.has("shard_size"):
		d.fail(ErrMalformed, "%s: shard_size is only for shards", where)
	case s.Method == SerializeShards:
		// model-signing 1.1.1 writes the size as a float (100000.0): any
		// JSON number with an integral value is accepted.
		var f float64
		if err := json.Unmarshal(ser.m["shard_size"], &f); err != nil || f != math.Trunc(f) || f < 1 || f > 1<<53 {
			d.fail(ErrMalformed, "%s.shard_size %.40s: want a positive integer", where, ser.m["shard_size"])
		}
		s.ShardSize = int64(f)
	}
}

// parseResources reads predicate.resources and groups them by file.
func (m *Manifest) parseResources(pred object) {
	d := pred.d
	l := pred.list("resources")
	if len(l) == 0 {
		d.fail(ErrMalformed, "predicate.resources: empty")
		return
	}
	shards := m.Serialization.Method == SerializeShards
	hashType := m.Serialization.HashType
	shardAlg := fmt.Sprintf("%s-sharded-%d", hashType, m.Serialization.ShardSize)
	m.Resources = make([]Resource, 0, len(l))
	m.files = make(map[string]*fileDigests)
	seen := make(map[string]bool, len(l))
	for i, raw := range l {
		if d.err != nil {
			return
		}
		o := d.object(fmt.Sprintf("predicate.resources[%d]", i), raw)
		r := Resource{Name: o.str("name")}
		// model-signing 1.1.1 names a shard's algorithm
		// "<hash_type>-sharded-<shard_size>"; the schema names hash_type.
		if alg := o.str("algorithm"); alg != hashType && !(shards && alg == shardAlg) {
			d.fail(ErrMalformed, "%s (%s): algorithm %s, want %s", o.where, quoteShort(r.Name), quoteShort(alg), hashType)
		}
		r.Digest = o.digest("digest")
		if seen[r.Name] {
			d.fail(ErrMalformed, "%s: %s is listed twice", o.where, quoteShort(r.Name))
		}
		seen[r.Name] = true
		r.Path, r.Start, r.End = r.Name, 0, -1
		if shards {
			var err error
			if r.Path, r.Start, r.End, err = splitShard(r.Name); err != nil {
				d.fail(ErrMalformed, "%s: %v", o.where, err)
			}
		}
		if !fs.ValidPath(r.Path) {
			d.fail(ErrMalformed, "%s: %s is not a relative slash-separated path inside the model", o.where, quoteShort(r.Path))
		}
		m.Resources = append(m.Resources, r)
		f := m.files[r.Path]
		if f == nil {
			f = &fileDigests{path: r.Path}
			m.files[r.Path] = f
		}
		f.ranges = append(f.ranges, r)
	}
	if d.err != nil || !shards {
		return
	}
	// Every file's shards must tile it from 0: each ShardSize long but the
	// last, which ends the file.
	for _, f := range m.files {
		slices.SortFunc(f.ranges, func(a, b Resource) int { return cmp.Compare(a.Start, b.Start) })
		var at int64
		for i, r := range f.ranges {
			last := i == len(f.ranges)-1
			n := r.End - r.Start
			if r.Start != at || n > m.Serialization.ShardSize || (!last && n != m.Serialization.ShardSize) {
				d.fail(ErrMalformed, "predicate.resources: the shards of %s do not tile it in %d-byte shards from offset 0 (%s)",
					quoteShort(f.path), m.Serialization.ShardSize, quoteShort(r.Name))
				return
			}
			at = r.End
		}
	}
}

// splitShard splits "path:start:end" at its last two colons.
func splitShard(name string) (p string, start, end int64, err error) {
	j := strings.LastIndexByte(name, ':')
	i := strings.LastIndexByte(name[:max(j, 0)], ':')
	if i < 0 {
		return "", 0, 0, fmt.Errorf("shard name %s is not PATH:START:END", quoteShort(name))
	}
	p = name[:i]
	start, ok1 := parseDecimal(name[i+1 : j])
	end, ok2 := parseDecimal(name[j+1:])
	if !ok1 || !ok2 || start >= end {
		return "", 0, 0, fmt.Errorf("shard name %s: want PATH:START:END with decimal START < END", quoteShort(name))
	}
	return p, start, end, nil
}

// parseDecimal parses a non-negative decimal without sign or leading zeros.
func parseDecimal(s string) (int64, bool) {
	if s == "" || (len(s) > 1 && s[0] == '0') || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// Paths returns the files the manifest signs, sorted.
func (m *Manifest) Paths() []string {
	out := make([]string, 0, len(m.files))
	for p := range m.files {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}
