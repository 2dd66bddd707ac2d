package ptd_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/mmapfile"
)

// The report of a current and of a legacy .ptd: "legacy" only for the
// latter, the header as the writer laid it out, and what each segment
// holds.
func TestReport(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		w := writer.TinyPTD()
		w.Legacy = legacy
		w.Entries = append(w.Entries, writer.PTDEntry{Key: "blob", Data: []byte("opaque")})
		b, err := w.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		info, err := w.Plan()
		if err != nil {
			t.Fatal(err)
		}
		f, err := ptd.NewFile(mmapfile.NewBytes(b))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fs := format.Fields(f.ReportFields())
		var keys []string
		for _, fl := range fs {
			keys = append(keys, fl.Key)
		}
		wantKeys := []string{"header"}
		if legacy {
			wantKeys = []string{"legacy", "header"}
		}
		if !slices.Equal(keys, wantKeys) {
			t.Fatalf("legacy %v: keys %q, want %q", legacy, keys, wantKeys)
		}
		js, _ := json.Marshal(fs)
		var doc struct {
			Legacy bool
			Header struct {
				Identifier        string
				FlatBufferSize    uint64 `json:"flatbuffer_size"`
				SegmentBaseOffset uint64 `json:"segment_base_offset"`
				LegacyLayout      bool   `json:"legacy_layout"`
				TensorAlignment   *int   `json:"tensor_alignment"`
			}
		}
		if err := json.Unmarshal(js, &doc); err != nil {
			t.Fatal(err)
		}
		h := doc.Header
		if doc.Legacy != legacy || h.Identifier != "FT01" || h.LegacyLayout != legacy || (h.TensorAlignment != nil) != legacy ||
			h.FlatBufferSize != info.FlatBufferSize || h.SegmentBaseOffset != info.SegmentBaseOffset {
			t.Errorf("legacy %v: %s; writer %+v", legacy, js, info)
		}

		// The current layout gives every entry a segment; the legacy one
		// puts the tensors in one shared segment and each blob in its own.
		want := []string{"named_data", "named_data", "named_data"}
		if legacy {
			want = []string{"tensors", "named_data"}
		}
		if got := f.SegmentKinds(); !slices.Equal(got, want) {
			t.Errorf("legacy %v: segment kinds %q, want %q", legacy, got, want)
		}
		var text strings.Builder
		if err := f.ReportText(&text); err != nil {
			t.Fatal(err)
		}
		title := "\nExecuTorch named data (FlatTensor)\n"
		if legacy {
			title = "\nExecuTorch named data (FlatTensor), legacy 2025 layout\n"
		}
		if !strings.HasPrefix(text.String(), title) || !strings.Contains(text.String(), "  segment base offset  ") {
			t.Errorf("legacy %v: text\n%s", legacy, text.String())
		}
	}
}
