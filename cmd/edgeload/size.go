package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeFlag is a byte count flag that takes IEC suffixes.
type sizeFlag int64

func (s *sizeFlag) String() string { return strconv.FormatInt(int64(*s), 10) }

func (s *sizeFlag) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s = sizeFlag(n)
	return nil
}

// parseSize parses a byte count: digits, optionally followed by B, KiB,
// MiB, GiB or TiB (case-insensitive, K, M, G and T alone allowed too).
func parseSize(s string) (int64, error) {
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
