package signing

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"path"
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
	const op = "statement"
	st, err := parseObject(op, "", payload)
	if err != nil {
		return nil, err
	}
	typ, err := st.str(op, "", "_type")
	if err != nil {
		return nil, err
	}
	if typ != statementType {
		return nil, errorf(op, ErrMalformed, "_type %s, want %s", quoteShort(typ), statementType)
	}
	pt, err := st.str(op, "", "predicateType")
	if err != nil {
		return nil, err
	}
	switch pt {
	case predicateType:
	case legacyPredicateType:
		return nil, errorf(op, ErrUnsupported, "predicateType %s is model-signing's pre-1.0 format; re-sign the model with model-signing 1.0 or later", pt)
	default:
		return nil, errorf(op, ErrMalformed, "predicateType %s, want %s", quoteShort(pt), predicateType)
	}
	m := &Manifest{}
	subj, err := st.list(op, "", "subject")
	if err != nil {
		return nil, err
	}
	if len(subj) != 1 {
		return nil, errorf(op, ErrMalformed, "subject: %d entries, want 1", len(subj))
	}
	s0, err := parseObject(op, "subject[0]", subj[0])
	if err != nil {
		return nil, err
	}
	if m.Name, err = s0.str(op, "subject[0]", "name"); err != nil {
		return nil, err
	}
	dg, err := s0.obj(op, "subject[0]", "digest")
	if err != nil {
		return nil, err
	}
	root, err := dg.str(op, "subject[0].digest", "sha256")
	if err != nil {
		return nil, err
	}
	if m.Digest, err = parseDigest(op, "subject[0].digest.sha256", root, sha256.Size); err != nil {
		return nil, err
	}
	pred, err := st.obj(op, "", "predicate")
	if err != nil {
		return nil, err
	}
	if err := m.parseSerialization(pred); err != nil {
		return nil, err
	}
	if err := m.parseResources(pred); err != nil {
		return nil, err
	}
	h := sha256.New()
	for _, r := range m.Resources {
		h.Write(r.Digest)
	}
	if sum := h.Sum(nil); !bytes.Equal(sum, m.Digest) {
		return nil, errorf(op, ErrMalformed, "the resources' digests hash to root digest %x, the subject says %x", sum, m.Digest)
	}
	return m, nil
}

// parseSerialization reads predicate.serialization.
func (m *Manifest) parseSerialization(pred object) error {
	const op, where = "statement", "predicate.serialization"
	ser, err := pred.obj(op, "predicate", "serialization")
	if err != nil {
		return err
	}
	s := &m.Serialization
	if s.Method, err = ser.str(op, where, "method"); err != nil {
		return err
	}
	if s.Method != SerializeFiles && s.Method != SerializeShards {
		return errorf(op, ErrMalformed, "%s.method %s, want files or shards", where, quoteShort(s.Method))
	}
	if s.HashType, err = ser.str(op, where, "hash_type"); err != nil {
		return err
	}
	switch s.HashType {
	case "sha256":
	case "blake2b", "blake3":
		return errorf(op, ErrUnsupported, "%s.hash_type %s: this verifier computes sha256 only", where, s.HashType)
	default:
		return errorf(op, ErrMalformed, "%s.hash_type %s, want sha256, blake2b or blake3", where, quoteShort(s.HashType))
	}
	if ser.has("allow_symlinks") {
		if err := json.Unmarshal(ser["allow_symlinks"], &s.AllowSymlinks); err != nil {
			return errorf(op, ErrMalformed, "%s.allow_symlinks: want true or false", where)
		}
	}
	if ser.has("ignore_paths") {
		l, err := ser.list(op, where, "ignore_paths")
		if err != nil {
			return err
		}
		for i, raw := range l {
			var p string
			if err := json.Unmarshal(raw, &p); err != nil {
				return errorf(op, ErrMalformed, "%s.ignore_paths[%d]: want a string", where, i)
			}
			s.IgnorePaths = append(s.IgnorePaths, p)
		}
	}
	switch {
	case s.Method == SerializeShards && !ser.has("shard_size"):
		return errorf(op, ErrMalformed, "%s: shards without a shard_size", where)
	case s.Method == SerializeFiles && ser.has("shard_size"):
		return errorf(op, ErrMalformed, "%s: shard_size is only for shards", where)
	case s.Method == SerializeShards:
		// model-signing 1.1.1 writes the size as a float (100000.0): any
		// JSON number with an integral value is accepted.
		var f float64
		if err := json.Unmarshal(ser["shard_size"], &f); err != nil || f != math.Trunc(f) || f < 1 || f > 1<<53 {
			return errorf(op, ErrMalformed, "%s.shard_size %.40s: want a positive integer", where, ser["shard_size"])
		}
		s.ShardSize = int64(f)
	}
	return nil
}

// parseResources reads predicate.resources and groups them by file.
func (m *Manifest) parseResources(pred object) error {
	const op = "statement"
	l, err := pred.list(op, "predicate", "resources")
	if err != nil {
		return err
	}
	if len(l) == 0 {
		return errorf(op, ErrMalformed, "predicate.resources: empty")
	}
	shards := m.Serialization.Method == SerializeShards
	hashType := m.Serialization.HashType
	shardAlg := fmt.Sprintf("%s-sharded-%d", hashType, m.Serialization.ShardSize)
	m.Resources = make([]Resource, 0, len(l))
	m.files = make(map[string]*fileDigests)
	seen := make(map[string]bool, len(l))
	for i, raw := range l {
		where := fmt.Sprintf("predicate.resources[%d]", i)
		o, err := parseObject(op, where, raw)
		if err != nil {
			return err
		}
		var r Resource
		if r.Name, err = o.str(op, where, "name"); err != nil {
			return err
		}
		alg, err := o.str(op, where, "algorithm")
		if err != nil {
			return err
		}
		// model-signing 1.1.1 names a shard's algorithm
		// "<hash_type>-sharded-<shard_size>"; the schema names hash_type.
		if alg != hashType && !(shards && alg == shardAlg) {
			return errorf(op, ErrMalformed, "%s (%s): algorithm %s, want %s", where, quoteShort(r.Name), quoteShort(alg), hashType)
		}
		d, err := o.str(op, where, "digest")
		if err != nil {
			return err
		}
		if r.Digest, err = parseDigest(op, where+".digest", d, sha256.Size); err != nil {
			return err
		}
		if seen[r.Name] {
			return errorf(op, ErrMalformed, "%s: %s is listed twice", where, quoteShort(r.Name))
		}
		seen[r.Name] = true
		r.Path, r.Start, r.End = r.Name, 0, -1
		if shards {
			if r.Path, r.Start, r.End, err = splitShard(r.Name); err != nil {
				return errorf(op, ErrMalformed, "%s: %v", where, err)
			}
		}
		if !fs.ValidPath(r.Path) {
			return errorf(op, ErrMalformed, "%s: %s is not a relative slash-separated path inside the model", where, quoteShort(r.Path))
		}
		m.Resources = append(m.Resources, r)
		f := m.files[r.Path]
		if f == nil {
			f = &fileDigests{path: r.Path}
			m.files[r.Path] = f
		}
		f.ranges = append(f.ranges, r)
	}
	if !shards {
		return nil
	}
	// Every file's shards must tile it from 0: each ShardSize long but the
	// last, which ends the file.
	for _, f := range m.files {
		slices.SortFunc(f.ranges, func(a, b Resource) int { return compareInt(a.Start, b.Start) })
		var at int64
		for i, r := range f.ranges {
			last := i == len(f.ranges)-1
			n := r.End - r.Start
			if r.Start != at || n > m.Serialization.ShardSize || (!last && n != m.Serialization.ShardSize) {
				return errorf(op, ErrMalformed, "predicate.resources: the shards of %s do not tile it in %d-byte shards from offset 0 (%s)",
					quoteShort(f.path), m.Serialization.ShardSize, quoteShort(r.Name))
			}
			at = r.End
		}
	}
	return nil
}

// splitShard splits "path:start:end" at its last two colons.
func splitShard(name string) (p string, start, end int64, err error) {
	j := strings.LastIndexByte(name, ':')
	if j < 0 {
		return "", 0, 0, fmt.Errorf("shard name %s is not PATH:START:END", quoteShort(name))
	}
	i := strings.LastIndexByte(name[:j], ':')
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

// parseDigest decodes a lowercase hex digest of n bytes.
func parseDigest(op, where, s string, n int) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != n || strings.ToLower(s) != s {
		return nil, errorf(op, ErrMalformed, "%s %s: want %d lowercase hex digits", where, quoteShort(s), 2*n)
	}
	return b, nil
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
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

// cleanIgnore turns an ignore path into the relative slash path it names,
// or "" when it names nothing inside the model.
func cleanIgnore(p string) string {
	p = path.Clean(p)
	if p == "." || !fs.ValidPath(p) {
		return ""
	}
	return p
}
