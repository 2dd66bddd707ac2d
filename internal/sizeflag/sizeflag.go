// Package sizeflag reads byte counts written with IEC suffixes (64MiB,
// 1GiB, 512k), for the command-line flags of edgeload's commands.
package sizeflag

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Value is a byte count flag (a flag.Value) that takes IEC suffixes; see
// Parse.
type Value int64

// String returns the byte count in decimal.
func (v *Value) String() string { return strconv.FormatInt(int64(*v), 10) }

// Set parses s with Parse.
func (v *Value) Set(s string) error {
	n, err := Parse(s)
	if err != nil {
		return err
	}
	*v = Value(n)
	return nil
}

// Parse parses a byte count: digits, optionally followed by B, KiB, MiB,
// GiB or TiB (case-insensitive, K, M, G and T alone allowed too, spaces
// allowed before the unit). A count that does not fit in an int64 is an
// error.
func Parse(s string) (int64, error) {
	num := strings.TrimRightFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	unit := strings.ToLower(strings.TrimSpace(s[len(num):]))
	if num == "" || strings.TrimLeft(num, "0123456789") != "" {
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional KiB, MiB, GiB or TiB", s)
	}
	shift := 0
	switch unit {
	case "", "b":
	case "k", "kib":
		shift = 10
	case "m", "mib":
		shift = 20
	case "g", "gib":
		shift = 30
	case "t", "tib":
		shift = 40
	default:
		return 0, fmt.Errorf("size %q: unknown unit %q (want KiB, MiB, GiB or TiB)", s, s[len(num):])
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return n << shift, nil
}
