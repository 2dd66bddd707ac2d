package signing

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// object is a JSON object whose members are looked up by their exact key:
// encoding/json's struct decoding matches keys case-insensitively, which a
// hostile bundle could use to make this package read other fields than
// other verifiers do.
type object map[string]json.RawMessage

// parseObject decodes raw, which must be a JSON object; where names it in
// errors.
func parseObject(op, where string, raw []byte) (object, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, errorf(op, ErrMalformed, "%snot a JSON object", prefix(where))
	}
	var o object
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, errorf(op, ErrMalformed, "%s%v", prefix(where), err)
	}
	return o, nil
}

// has reports whether the member key is present and not null.
func (o object) has(key string) bool {
	v, ok := o[key]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

// obj returns the member key, which must be an object.
func (o object) obj(op, where, key string) (object, error) {
	v, ok := o[key]
	if !ok {
		return nil, errorf(op, ErrMalformed, "%sno %q", prefix(where), key)
	}
	return parseObject(op, join(where, key), v)
}

// str returns the member key, which must be a string.
func (o object) str(op, where, key string) (string, error) {
	v, ok := o[key]
	if !ok {
		return "", errorf(op, ErrMalformed, "%sno %q", prefix(where), key)
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", errorf(op, ErrMalformed, "%s: want a string", join(where, key))
	}
	return s, nil
}

// optStr returns the member key, a string, or "" when it is absent or null.
func (o object) optStr(op, where, key string) (string, error) {
	if !o.has(key) {
		return "", nil
	}
	return o.str(op, where, key)
}

// list returns the member key, which must be an array.
func (o object) list(op, where, key string) ([]json.RawMessage, error) {
	v, ok := o[key]
	if !ok {
		return nil, errorf(op, ErrMalformed, "%sno %q", prefix(where), key)
	}
	var l []json.RawMessage
	if err := json.Unmarshal(v, &l); err != nil || l == nil {
		return nil, errorf(op, ErrMalformed, "%s: want an array", join(where, key))
	}
	return l, nil
}

// int64Str returns the member key, an integer written as a JSON string
// (protobuf's JSON form of int64) or as a number.
func (o object) int64Str(op, where, key string) (int64, error) {
	v, ok := o[key]
	if !ok {
		return 0, errorf(op, ErrMalformed, "%sno %q", prefix(where), key)
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		s = string(bytes.TrimSpace(v))
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, errorf(op, ErrMalformed, "%s: want a non-negative integer, got %.40s", join(where, key), s)
	}
	return n, nil
}

// only fails when o has a member other than keys.
func (o object) only(op, where string, keys ...string) error {
	for _, k := range slices.Sorted(maps.Keys(o)) {
		if !slices.Contains(keys, k) {
			return errorf(op, ErrMalformed, "%sunknown member %s", prefix(where), quoteShort(k))
		}
	}
	return nil
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
