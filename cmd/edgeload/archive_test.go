package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestInspectTaskBundle: inspect of a MediaPipe task bundle (a zip of
// models, no model itself) lists its stored models and the ARCHIVE!/ENTRY
// argument that opens each, in text and JSON, with exit status 0; each of
// those arguments opens; verify of the bundle fails with a line that
// names ARCHIVE!/ENTRY.
func TestInspectTaskBundle(t *testing.T) {
	task := fixture("tiny.task")
	names := []string{"hand_detector.tflite", "hand_landmarks_detector.tflite"}
	code, out, errOut := runCmd("inspect", task)
	if code != exitOK || errOut != "" {
		t.Fatalf("inspect: exit %d, stderr %q", code, errOut)
	}
	for _, n := range names {
		if !strings.Contains(out, task+"!/"+n) {
			t.Errorf("inspect's listing does not say how to open %s:\n%s", n, out)
		}
	}
	code, out, _ = runCmd("inspect", "--json", task)
	var rep struct {
		Format  string `json:"format"`
		Entries []struct {
			Name, Format, Open string
			Stored             bool
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitOK || rep.Format != "zip" || len(rep.Entries) != len(names) {
		t.Fatalf("inspect --json: exit %d, %v: %s", code, err, out)
	}
	for i, e := range rep.Entries {
		if e.Name != names[i] || e.Format != "tflite" || !e.Stored || e.Open != task+"!/"+names[i] {
			t.Errorf("entry %d: %+v", i, e)
		}
		if code, out, errOut := runCmd("inspect", e.Open); code != exitOK || !strings.Contains(out, "format  tflite") {
			t.Errorf("inspect %s: exit %d, %s%s", e.Open, code, out, errOut)
		}
	}
	code, out, _ = runCmd("verify", task)
	if code != exitInvalid || !strings.Contains(out, "FAIL") || !strings.Contains(out, "ARCHIVE!/ENTRY") {
		t.Errorf("verify of the bundle: exit %d, %q: want 1 and a FAIL line naming ARCHIVE!/ENTRY", code, out)
	}
}
