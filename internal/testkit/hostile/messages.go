package hostile

import (
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/edgeload/edgeload/loader/format"
)

// A message family: the text of one kind of refusal, and a check that the
// numbers it states make its claim true (nil when they do).
type family struct {
	re    *regexp.Regexp
	check func(n []int64, at int64) string
}

// num is a number as a message prints it: decimal, or hexadecimal with 0x.
const num = `(-?(?:0x[0-9a-f]+|\d+))`

// fam makes a family of pattern, a regular expression in which {n} stands
// for a number, passed to check in order.
func fam(pattern string, check func(n []int64, at int64) string) family {
	return family{regexp.MustCompile("^" + strings.ReplaceAll(pattern, "{n}", num) + "$"), check}
}

func claim(ok bool, what string) string {
	if ok {
		return ""
	}
	return what
}

// families are the refusals of package fbverify and of the TFLite reader.
var families = []family{
	// fbverify.
	fam(`offset field runs past the end of the FlatBuffer \({n} bytes\); want 4 bytes inside it`,
		func(n []int64, at int64) string { return claim(at+4 > n[0], "the field lies inside") }),
	fam(`offset 0 points at itself \(want a positive offset\)`, nil),
	fam(`offset {n} points to {n}, past the end of the FlatBuffer \({n} bytes\); want a target below {n}`,
		func(n []int64, at int64) string {
			return claim(n[1] == at+n[0] && n[1] >= n[3], "the target is not past the end, or not the offset's")
		}),
	fam(`more than {n} tables, vectors and strings visited: shared or looping references \(want at most {n} in a FlatBuffer of {n} bytes\)`,
		func(n []int64, _ int64) string { return claim(n[0] == n[1], "two limits") }),
	fam(`table at {n} is not 4-aligned \(want its vtable offset on a 4-byte boundary\)`,
		func(n []int64, at int64) string { return claim(n[0]%4 != 0 && n[0] == at, "the table is 4-aligned") }),
	fam(`table runs past the end of the FlatBuffer \(want its 4-byte vtable offset before {n}\)`,
		func(n []int64, at int64) string { return claim(at+4 > n[0], "the vtable offset lies inside") }),
	fam(`vtable offset points to {n}, which is not 2-aligned \(want an even position\)`,
		func(n []int64, _ int64) string { return claim(n[0]%2 != 0, "the position is even") }),
	fam(`vtable offset points to {n}: its 2-byte size does not lie inside the FlatBuffer \[{n}, {n}\)`,
		func(n []int64, _ int64) string { return claim(n[0] < n[1] || n[0]+2 > n[2], "the size lies inside") }),
	fam(`vtable size {n} is odd \(want an even number of bytes\)`,
		func(n []int64, _ int64) string { return claim(n[0]%2 != 0, "the size is even") }),
	fam(`vtable of {n} bytes runs past the end of the FlatBuffer \({n} bytes left\)`,
		func(n []int64, _ int64) string { return claim(n[0] > n[1], "the vtable fits") }),
	fam(`field at table offset {n} \({n} bytes\) lies at {n}, which is not {n}-aligned \(want it on a {n}-byte boundary\)`,
		func(n []int64, at int64) string {
			return claim(n[2] == at && n[3] == n[1] && n[4] == n[1] && n[2]%n[1] != 0, "the field is aligned")
		}),
	fam(`field at table offset {n} \({n} bytes\) lies outside the FlatBuffer; want it to end by {n}`,
		func(n []int64, at int64) string { return claim(at+n[1] > n[2], "the field ends in time") }),
	fam(`vector at {n} is not 4-aligned \(want its length on a 4-byte boundary\)`,
		func(n []int64, at int64) string { return claim(n[0]%4 != 0 && n[0] == at, "the vector is 4-aligned") }),
	fam(`vector length runs past the end of the FlatBuffer \(want 4 bytes before {n}\)`,
		func(n []int64, at int64) string { return claim(at+4 > n[0], "the length lies inside") }),
	fam(`vector of {n} elements of {n} bytes runs past the end of the FlatBuffer \({n} bytes left: want at most {n} elements\)`,
		func(n []int64, _ int64) string {
			return claim(n[0]*n[1] > n[2] && n[1] > 0 && n[3] == n[2]/n[1], "the vector fits")
		}),
	fam(`string of {n} bytes has no NUL terminator \(want a 0 byte at {n}\)`, nil),
	fam(`tables nested more than {n} deep \(want at most {n} levels\)`,
		func(n []int64, _ int64) string { return claim(n[0] == n[1], "two limits") }),
	fam(`more than {n} tables \(want at most {n}, counting a shared table at each visit\)`,
		func(n []int64, _ int64) string { return claim(n[0] == n[1], "two limits") }),
	fam(`required field is missing \(the schema says it must be present\)`, nil),
	fam(`union tag lies outside the FlatBuffer \(want it before {n}\)`,
		func(n []int64, at int64) string { return claim(at >= n[0], "the tag lies inside") }),
	fam(`union tag {n} has no value \(want a value offset with any tag but NONE\)`,
		func(n []int64, _ int64) string { return claim(n[0] != 0, "tag NONE") }),
	fam(`unknown union tag {n} \(known: 1..{n}\)`,
		func(n []int64, _ int64) string { return claim(n[0] > n[1], "a known tag") }),
	fam(`FlatBuffer of {n} bytes exceeds the 2 GiB FlatBuffer limit`,
		func(n []int64, _ int64) string { return claim(n[0] > 1<<31-1, "the size is within it") }),
	fam(`FlatBuffer of {n} bytes is shorter than its 8-byte prefix \(want at least 8 bytes\)`,
		func(n []int64, _ int64) string { return claim(n[0] < 8, "8 bytes or more") }),
	// loader/tflite.
	fam(`file of {n} bytes is shorter than the 8-byte FlatBuffer prefix \(root offset and "TFL3"\)`,
		func(n []int64, _ int64) string { return claim(n[0] < 8, "8 bytes or more") }),
	fam(`identifier ".*", want "TFL3"`, nil),
	fam(`schema version {n} \(want at most {n}\)`,
		func(n []int64, _ int64) string { return claim(n[0] > n[1], "a version within the bound") }),
	fam(`model has no subgraph \(want at least the main graph\)`, nil),
	fam(`[a-z ]+ index {n} out of range \(want 0 <= index < {n}\)`,
		func(n []int64, _ int64) string { return claim(n[0] < 0 || n[0] >= n[1], "the index is in range") }),
	fam(`bytes \[{n}, \+{n}\) run past the end of the {n}-byte file`,
		func(n []int64, _ int64) string {
			return claim(n[1] > n[2] || n[0] > n[2]-n[1], "the bytes lie in the file")
		}),
	fam(`buffer has both {n} bytes of data and offset {n} \(want one or the other: runtimes disagree on which wins\)`,
		func(n []int64, _ int64) string { return claim(n[0] > 0 && n[1] > 1, "not both") }),
	fam(`constant of type [a-z0-9()-]+ \(want a type with a fixed layout: not resource or variant\)`, nil),
	fam(`tensor has both buffer {n} and external buffer {n} \(want one\)`,
		func(n []int64, _ int64) string { return claim(n[0] != 0 && n[1] != 0, "not both") }),
	fam(`constant has shape \[[-0-9 ]*\] \(want no negative dimension\)`, nil),
	fam(`[a-z0-9_()-]+ \[[-0-9 ]*\] needs {n} bytes, buffer {n} holds {n}`,
		func(n []int64, _ int64) string { return claim(n[0] != n[2], "the sizes agree") }),
	fam(`the FlatBuffer's tables reach {n} bytes of strings and vectors, shared \(want at most {n}: 4 times the FlatBuffer region\)`,
		func(n []int64, _ int64) string { return claim(n[0] > n[1], "within the bound") }),
}

// Contradiction checks a refusal's message against the families of
// messages package fbverify and the TFLite reader write: known reports
// whether the message is of one of them, problem what its numbers
// contradict ("" when nothing). The numbers of a message must make its
// claim true: a "runs past the end" must run past it, an "out of range"
// index must be out of range, a misalignment must be one.
func Contradiction(err error) (known bool, problem string) {
	var fe *format.FormatError
	if !errors.As(err, &fe) {
		return false, ""
	}
	for _, f := range families {
		m := f.re.FindStringSubmatch(fe.Msg)
		if m == nil {
			continue
		}
		if f.check == nil {
			return true, ""
		}
		var n []int64
		for _, s := range m[1:] {
			v, err := strconv.ParseInt(s, 0, 64)
			if err != nil {
				// Past int64 (an unsigned 64-bit value from the file):
				// saturated, which keeps every comparison with a size
				// true.
				u, uerr := strconv.ParseUint(s, 0, 64)
				if uerr != nil {
					return true, "a number that does not parse: " + s
				}
				v = int64(min(u, math.MaxInt64))
			}
			n = append(n, v)
		}
		return true, f.check(n, fe.Offset)
	}
	return false, ""
}
