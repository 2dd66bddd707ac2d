package npy

import (
	"slices"
	"strings"
	"testing"
)

func TestParseHeader(t *testing.T) {
	for _, c := range []struct {
		text   string
		want   header
		err    string
		unsupp bool
	}{
		{text: "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }      \n", want: header{"<f4", false, []int64{3, 4}}},
		{text: `{"shape":(),"descr":"|b1","fortran_order":True}`, want: header{"|b1", true, []int64{}}},
		{text: "{'descr': '<i8', 'fortran_order': False, 'shape': (5L, 2L)}", want: header{"<i8", false, []int64{5, 2}}},
		{text: "{'descr': '<i8', 'fortran_order': False, 'shape': (7,)}", want: header{"<i8", false, []int64{7}}},
		{text: "{'descr': '<i8', 'fortran_order': False, 'shape': (7)}", err: "not a tuple"},
		{text: "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (2,)}", err: "structured dtype", unsupp: true},
		{text: "{'descr': '<f4', 'fortran_order': False}", err: "lacks one of"},
		{text: "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}", err: "given twice"},
		{text: "{'descr': '<f4', 'fortran_order': false, 'shape': ()}", err: "True or False"},
		{text: "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", err: "non-negative integer"},
		{text: "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", err: "out of range"},
		{text: "{'descr': '<f4', 'fortran_order': False, 'shape': ()} x", err: "after the dict"},
		{text: "{'descr': '<f4' 'fortran_order': False, 'shape': ()}", err: "want ',' or '}'"},
		{text: "{'descr': '<\\f4', 'fortran_order': False, 'shape': ()}", err: "escapes"},
		{text: "{'descr: '<f4'", err: "want ':'"},
		{text: "{'extra': 1}", err: "want only descr"},
		{text: "{'shape': (" + strings.Repeat("1,", 65) + ")}", err: "more than 64"},
		{text: "", err: "want a dict"},
	} {
		h, err := parseHeader([]byte(c.text))
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%q: %s", c.text, err.msg)
		case c.err == "" && (h.descr != c.want.descr || h.fortran != c.want.fortran || !slices.Equal(h.shape, c.want.shape) || h.shape == nil):
			t.Errorf("%q: %+v, want %+v", c.text, h, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.msg, c.err) || err.unsupported != c.unsupp || err.pos > len(c.text)):
			t.Errorf("%q: %+v, want an error saying %q (unsupported %v)", c.text, err, c.err, c.unsupp)
		}
	}
}

func TestDTypeOf(t *testing.T) {
	for descr, want := range map[string]string{
		"<f4": "float32", "|u1": "uint8", "|i1": "int8", ">i1": "int8", "|b1": "bool", "<c16": "complex128", "<u8": "uint64",
		">f4": "big-endian", "|f4": "byte order", "=f4": "byte order", "<U3": "only numbers", "|O": "not a byte order", "<M8": "only numbers", "<V2": "only numbers",
	} {
		d, msg := dtypeOf(descr)
		if !strings.Contains(d.String()+msg, want) {
			t.Errorf("dtypeOf(%q) = %v, %q; want %q", descr, d, msg, want)
		}
	}
}

func TestShapeText(t *testing.T) {
	for _, c := range []struct {
		shape []int64
		want  string
	}{{nil, "()"}, {[]int64{3}, "(3,)"}, {[]int64{3, 4, 0}, "(3, 4, 0)"}} {
		if got := shapeText(c.shape); got != c.want {
			t.Errorf("shapeText(%v) = %q, want %q", c.shape, got, c.want)
		}
	}
}
