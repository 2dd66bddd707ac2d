package main

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJSONNotHTMLEscaped: the reports keep <, > and & as they are, in a
// tensor's name and in a member the format adds (safetensors metadata),
// and in the stream report's file name, where json.Marshal writes \u003c,
// \u003e and \u0026.
func TestJSONNotHTMLEscaped(t *testing.T) {
	header := `{"__metadata__":{"descr":"<f4"},"w<1>&b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(append(b, header...), 0, 0, 0x80, 0x3f)
	path := filepath.Join(t.TempDir(), "m<&>.safetensors")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"inspect", "--json", path}, {"stream", "--json", path}} {
		code, out, errOut := runCmd(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		if !json.Valid([]byte(out)) || strings.Contains(out, `\u00`) {
			t.Errorf("%v: escaped or invalid JSON:\n%s", args, out)
		}
		if !strings.Contains(out, "m<&>.safetensors") && args[0] == "stream" {
			t.Errorf("stream --json does not show the file name as it is:\n%s", out)
		}
		if args[0] == "inspect" && (!strings.Contains(out, `"name": "w<1>&b"`) || !strings.Contains(out, `"descr": "<f4"`)) {
			t.Errorf("inspect --json does not show the name and metadata as they are:\n%s", out)
		}
	}
}
