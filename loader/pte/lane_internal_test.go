package pte

import "testing"

// arm takes the lane only through vtables whose tables it can read with
// one range check each: an EValue with both fields, its val inside the
// extent checked, and a Tensor without allocation_info and
// extra_tensor_info.
func TestLaneArm(t *testing.T) {
	ev := vcache{vt: 100, need: 9, fo: [maxCached]int64{8, 4}} // val at 4, val_type at 8
	tn := vcache{vt: 200, need: 28, fo: [maxCached]int64{tScalarType: 27, tSizes: 4, tDimOrder: 8, tDataBufferIdx: 12}}
	for _, c := range []struct {
		name string
		ev   func(*vcache)
		tn   func(*vcache)
		want bool
	}{
		{"plain", nil, nil, true},
		{"val_type absent", func(c *vcache) { c.fo[0] = 0 }, nil, false},
		{"val absent", func(c *vcache) { c.fo[1] = 0 }, nil, false},
		{"val past the checked extent", func(c *vcache) { c.fo[0], c.fo[1], c.need = 4, 8, 5 }, nil, false},
		{"val ending the checked extent", func(c *vcache) { c.fo[0], c.fo[1], c.need = 4, 8, 12 }, nil, true},
		{"no EValue vtable yet", func(c *vcache) { c.vt = noVT }, nil, false},
		{"no Tensor vtable yet", nil, func(c *vcache) { c.vt = noVT }, false},
		{"allocation_info", nil, func(c *vcache) { c.fo[tAllocationInfo] = 16 }, false},
		{"extra_tensor_info", nil, func(c *vcache) { c.fo[tExtraInfo] = 16 }, false},
	} {
		r := fbr{evalueVT: ev, tensorVT: tn}
		if c.ev != nil {
			c.ev(&r.evalueVT)
		}
		if c.tn != nil {
			c.tn(&r.tensorVT)
		}
		var l lane
		if got := l.arm(&r); got != c.want {
			t.Errorf("%s: arm = %v, want %v", c.name, got, c.want)
		}
		// Armed for these vtables, it answers the same without looking again.
		if got := l.arm(&r); got != c.want {
			t.Errorf("%s: second arm = %v, want %v", c.name, got, c.want)
		}
		if c.want && (l.objects != 4 || l.eneed != r.evalueVT.need || l.sizes != 4 || l.dims != 8) {
			t.Errorf("%s: lane %+v", c.name, l)
		}
	}
}
