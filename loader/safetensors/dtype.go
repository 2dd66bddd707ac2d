package safetensors

import "github.com/edgeload/edgeload/loader/format"

// codes maps each dtype code of the safetensors format (the Rust crate's
// Dtype enum, exact and upper case) to its element type and width in bits.
var codes = [...]struct {
	code string
	dt   format.DType
	bits uint64
}{
	{"BOOL", format.Bool, 8},
	{"F4", format.Float4E2M1FN, 4},
	{"F6_E2M3", format.Float6E2M3FN, 6},
	{"F6_E3M2", format.Float6E3M2FN, 6},
	{"U8", format.Uint8, 8},
	{"I8", format.Int8, 8},
	{"F8_E5M2", format.Float8E5M2, 8},
	{"F8_E4M3", format.Float8E4M3FN, 8},
	{"F8_E8M0", format.Float8E8M0FNU, 8},
	{"F8_E4M3FNUZ", format.Float8E4M3FNUZ, 8},
	{"F8_E5M2FNUZ", format.Float8E5M2FNUZ, 8},
	{"I16", format.Int16, 16},
	{"U16", format.Uint16, 16},
	{"F16", format.Float16, 16},
	{"BF16", format.BFloat16, 16},
	{"I32", format.Int32, 32},
	{"U32", format.Uint32, 32},
	{"F32", format.Float32, 32},
	{"C64", format.Complex64, 64},
	{"F64", format.Float64, 64},
	{"I64", format.Int64, 64},
	{"U64", format.Uint64, 64},
}

// lookupCode returns the element type and bit width of a dtype code.
func lookupCode(code []byte) (format.DType, uint64, bool) {
	for _, c := range codes {
		if c.code == string(code) {
			return c.dt, c.bits, true
		}
	}
	return format.Invalid, 0, false
}

// Code returns the safetensors dtype code of d ("F32", "BF16", "F4", ...),
// or "" when the format has no code for it.
func Code(d format.DType) string {
	for _, c := range codes {
		if c.dt == d {
			return c.code
		}
	}
	return ""
}

// bitsOf returns the width in bits of an element of d, 0 when the format
// has no code for it.
func bitsOf(d format.DType) uint64 {
	for _, c := range codes {
		if c.dt == d {
			return c.bits
		}
	}
	return 0
}

// looksLikeCode reports whether s has the shape of a dtype code (upper
// case letters, digits and '_'): an unknown one is taken for a newer code.
func looksLikeCode(s []byte) bool {
	if len(s) == 0 || len(s) > 16 {
		return false
	}
	for _, c := range s {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
