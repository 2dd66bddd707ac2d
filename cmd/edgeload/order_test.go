package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
)

// useOrderDoc decodes the use_order of inspect --json, keeping the keys'
// order.
func useOrderDoc(t *testing.T, out string) (keys []string, orders map[string][]string) {
	t.Helper()
	var doc struct {
		UseOrder json.RawMessage `json:"use_order"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.UseOrder == nil {
		t.Fatalf("no use_order in %s: %v", out, err)
	}
	if err := json.Unmarshal(doc.UseOrder, &orders); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(doc.UseOrder)))
	dec.Token() // {
	for dec.More() {
		k, _ := dec.Token()
		keys = append(keys, k.(string))
		var skip any
		dec.Decode(&skip)
	}
	return keys, orders
}

// inspect --json carries every method's use order, by tensor name, in
// method order; for a .rten or .ptd one order under "".
func TestInspectUseOrder(t *testing.T) {
	paths := append(testmodels.All(t), fixture("tiny.pte"), fixture("tiny-v2.rten"), fixture("tiny.ptd"))
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			code, out, errOut := runCmd("inspect", "--json", path)
			if strings.HasSuffix(path, ".bpte") {
				return // not a model: inspect fails as before
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			m, err := loader.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			methods := m.Groups()
			if methods == nil {
				methods = []string{""}
			}
			keys, orders := useOrderDoc(t, out)
			if !slices.Equal(keys, methods) {
				t.Fatalf("use_order keys %q, want %q", keys, methods)
			}
			var all []string
			uo, used := m.Impl().(format.UsedOrderer)
			for _, meth := range methods {
				order, err := m.UseOrder(meth)
				if used {
					// the order without the tensors no operator reads
					order, err = uo.UsedOrder(meth)
				}
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for _, i := range order {
					want = append(want, m.TensorAt(i).Name)
				}
				if got := orders[meth]; !slices.Equal(got, want) || got == nil {
					t.Errorf("use_order[%q] = %q, want %q", meth, got, want)
				}
				all = append(all, orders[meth]...)
			}
			// Every tensor once over all methods.
			var names []string
			for i := range m.NumTensors() {
				names = append(names, m.TensorAt(i).Name)
			}
			slices.Sort(all)
			slices.Sort(names)
			if used {
				// some tensors are left out, and a subgraph reached from
				// several lists its own
				all = slices.Compact(all)
				for _, n := range all {
					if _, ok := slices.BinarySearch(names, n); !ok {
						t.Errorf("use_order names %q, no such tensor", n)
					}
				}
			} else if !slices.Equal(all, names) {
				t.Errorf("use_order names %q, tensors %q", all, names)
			}
			if filepath.Base(path) == "arduino-keyword-spotting.pte" {
				want := []string{"forward/values/39", "forward/values/40", "forward/values/38", "forward/values/37", "forward/values/44"}
				if got := orders["forward"]; len(got) < 5 || !slices.Equal(got[:5], want) {
					t.Errorf("use_order[forward] starts %q, want %q", got[:min(5, len(got))], want)
				}
			}
		})
	}
}

// inspect --order prints each method's order as a table after the report;
// without it, no such section.
func TestInspectOrderText(t *testing.T) {
	path := testmodels.Path(t, "pte/arduino-keyword-spotting.pte")
	code, out, errOut := runCmd("inspect", "--order", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	i := strings.Index(out, "\nuse order of forward (83)\n")
	if i < 0 {
		t.Fatalf("no use order section in:\n%s", out)
	}
	lines := strings.Split(out[i+1:], "\n")
	for k, name := range []string{"forward/values/39", "forward/values/40", "forward/values/38"} {
		f := strings.Fields(lines[2+k])
		if len(f) != 4 || f[0] != strconv.Itoa(k) || f[1] != name {
			t.Errorf("line %d %q, want #%d %s", k, lines[2+k], k, name)
		}
	}
	if _, out, _ := runCmd("inspect", path); strings.Contains(out, "use order") {
		t.Error("inspect without --order prints a use order")
	}
	_, out, _ = runCmd("inspect", "--order", fixture("tiny-v2.rten"))
	if !strings.Contains(out, "\nuse order (2)\n") || !strings.Contains(out, "0  linear.weight") {
		t.Errorf("rten use order missing:\n%s", out)
	}
}
