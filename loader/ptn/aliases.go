package ptn

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// parseAliases reads aliases.json (found at file offset base): one JSON
// object of string to string, valid UTF-8, no key twice. It returns the
// pairs sorted by key.
func parseAliases(b []byte, base int64) ([][2]string, error) {
	if !utf8.Valid(b) {
		return nil, errorf(AliasesMember, base, "not valid UTF-8")
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	bad := func(what string) error {
		return errorf(AliasesMember, base+d.InputOffset(), "want an object of alias key to owner key: %s", what)
	}
	tok, err := d.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, bad("no object")
	}
	var pairs [][2]string
	seen := map[string]bool{}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, bad(err.Error())
		}
		v, err := d.Token()
		if err != nil {
			return nil, bad(err.Error())
		}
		vs, ok := v.(string)
		if !ok {
			return nil, bad("the value of " + strconv.Quote(k.(string)) + " is not a string")
		}
		ks := k.(string)
		if seen[ks] {
			return nil, errorf(AliasesMember, base, "alias %s appears twice", strconv.Quote(ks))
		}
		seen[ks] = true
		pairs = append(pairs, [2]string{ks, vs})
	}
	if tok, err := d.Token(); err != nil || tok != json.Delim('}') {
		return nil, bad("unterminated object")
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, bad("data after the object")
	}
	slices.SortFunc(pairs, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return pairs, nil
}
