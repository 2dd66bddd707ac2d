package platform

import "testing"

// TestPopulateReadFallback makes the kernel reject the populate advice
// (EINVAL, as kernels before 5.14 do) and checks that Madvise falls back to
// WillNeed instead of failing.
func TestPopulateReadFallback(t *testing.T) {
	f, want := tempFile(t, 2*PageSize())
	b, err := Map(f, 0, len(want))
	if err != nil {
		t.Fatal(err)
	}
	defer Unmap(b)
	saved := populateRead
	defer func() { populateRead = saved }()
	populateRead = 0x7fff // no such advice: EINVAL
	if err := Madvise(b, AdvicePopulateRead); err != nil {
		t.Fatalf("Madvise(PopulateRead) with an unknown advice: %v, want the WillNeed fallback", err)
	}
	if err := Madvise(b, AdviceHugePage); err != nil {
		t.Logf("HugePage: %v", err)
	}
}
