package signing

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// decoder reads a JSON document for op and keeps its first failure: once
// err is set every read returns a zero value, so a parser checks err once.
type decoder struct {
	op  string
	err error
}

// fail records a failure unless one is recorded already.
func (d *decoder) fail(sentinel error, format string, args ...any) {
	if d.err == nil {
		d.err = errorf(d.op, sentinel, format, args...)
	}
}

// object is a JSON object whose members are looked up by their exact key:
// encoding/json's struct decoding matches keys case-insensitively, which a
// hostile bundle could use to make this package read other fields than
// other verifiers do. where names it in errors.
type object struct {
	d     *decoder
	where string
	m     map[string]json.RawMessage
}

// object decodes raw, which must be a JSON object.
func (d *decoder) object(where string, raw []byte) object {
	o := object{d: d, where: where}
	if d.err != nil {
		return o
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		d.fail(ErrMalformed, "%snot a JSON object", prefix(where))
	} else if err := json.Unmarshal(raw, &o.m); err != nil {
		d.fail(ErrMalformed, "%s%v", prefix(where), err)
	}
	return o
}

// has reports whether the member key is present and not null.
func (o object) has(key string) bool {
	v, ok := o.m[key]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

// member returns the member key, which must be present; nil after a failure.
func (o object) member(key string) json.RawMessage {
	if v, ok := o.m[key]; ok && o.d.err == nil {
		return v
	}
	o.d.fail(ErrMalformed, "%sno %q", prefix(o.where), key)
	return nil
}

// obj returns the member key, which must be an object.
func (o object) obj(key string) object {
	return o.d.object(join(o.where, key), o.member(key))
}

// str returns the member key, which must be a string.
func (o object) str(key string) string {
	var s string
	if v := o.member(key); v != nil && json.Unmarshal(v, &s) != nil {
		o.d.fail(ErrMalformed, "%s: want a string", join(o.where, key))
	}
	return s
}

// optStr returns the member key, a string, or "" when it is absent or null.
func (o object) optStr(key string) string {
	if !o.has(key) {
		return ""
	}
	return o.str(key)
}

// text returns the member key when it is a string, and "" otherwise.
func (o object) text(key string) string {
	var s string
	_ = json.Unmarshal(o.m[key], &s)
	return s
}

// list returns the member key, which must be an array.
func (o object) list(key string) []json.RawMessage {
	v := o.member(key)
	if v == nil {
		return nil
	}
	var l []json.RawMessage
	if err := json.Unmarshal(v, &l); err != nil || l == nil {
		o.d.fail(ErrMalformed, "%s: want an array", join(o.where, key))
		return nil
	}
	return l
}

// integer returns the member key, an integer written as a JSON string
// (protobuf's JSON form of int64) or as a number.
func (o object) integer(key string) int64 {
	v := o.member(key)
	if v == nil {
		return 0
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		s = string(bytes.TrimSpace(v))
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		o.d.fail(ErrMalformed, "%s: want a non-negative integer, got %.40s", join(o.where, key), s)
	}
	return n
}

// b64 returns the member key, a base64 string, decoded.
func (o object) b64(key string) []byte {
	return o.d.decode64(join(o.where, key), o.str(key))
}

// digest returns the member key, a lowercase hex SHA-256 digest, decoded.
func (o object) digest(key string) []byte {
	s := o.str(key)
	if o.d.err != nil {
		return nil
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size || strings.ToLower(s) != s {
		o.d.fail(ErrMalformed, "%s %s: want %d lowercase hex digits", join(o.where, key), quoteShort(s), 2*sha256.Size)
	}
	return b
}

// only fails when o has a member other than keys.
func (o object) only(keys ...string) {
	for _, k := range slices.Sorted(maps.Keys(o.m)) {
		if !slices.Contains(keys, k) {
			o.d.fail(ErrMalformed, "%sunknown member %s", prefix(o.where), quoteShort(k))
			return
		}
	}
}

// decode64 decodes standard base64, padded or not.
func (d *decoder) decode64(where, s string) []byte {
	if d.err != nil {
		return nil
	}
	enc := base64.StdEncoding
	if len(s)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	b, err := enc.DecodeString(s)
	if err != nil {
		d.fail(ErrMalformed, "%s: bad base64: %v", where, err)
	}
	return b
}

// join names the member key of where.
func join(where, key string) string {
	if where == "" {
		return key
	}
	return where + "." + key
}

// prefix is "where: ", or "" for the top level.
func prefix(where string) string {
	if where == "" {
		return ""
	}
	return where + ": "
}

// quoteShort quotes s for an error message, cut to 60 bytes.
func quoteShort(s string) string {
	if len(s) > 60 {
		return strconv.Quote(s[:60]) + "…"
	}
	return strconv.Quote(s)
}

// hexShort writes a digest's first bytes in hex for an error message.
func hexShort(b []byte) string {
	if len(b) > 6 {
		return fmt.Sprintf("%x…", b[:6])
	}
	return fmt.Sprintf("%x", b)
}
