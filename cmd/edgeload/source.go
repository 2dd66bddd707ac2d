package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/mmapfile"
)

// archiveSep separates an archive's path from an entry's name in a FILE
// argument ("app.apk!/assets/model.pte"), as in Android's linker.
const archiveSep = "!/"

// splitArchive splits a FILE argument of the form ARCHIVE!/ENTRY. A path
// that names an existing file is a file, "!/" or not; otherwise the
// archive is the first prefix before a "!/" that is an existing file.
func splitArchive(arg string) (archive, entry string, ok bool) {
	if !strings.Contains(arg, archiveSep) {
		return "", "", false
	}
	if _, err := os.Stat(arg); err == nil {
		return "", "", false
	}
	for i := 0; ; {
		j := strings.Index(arg[i:], archiveSep)
		if j < 0 {
			return "", "", false
		}
		i += j
		if fi, err := os.Stat(arg[:i]); err == nil && fi.Mode().IsRegular() {
			return arg[:i], arg[i+len(archiveSep):], true
		}
		i += len(archiveSep)
	}
}

// openMapped maps a FILE argument: a file, or an entry stored in a zip
// archive (ARCHIVE!/ENTRY).
func openMapped(path string) (*mmapfile.File, error) {
	if a, e, ok := splitArchive(path); ok {
		return mmapfile.Open(a, mmapfile.WithZipEntry(e))
	}
	return mmapfile.Open(path)
}

// openModel opens a FILE argument (a file or ARCHIVE!/ENTRY) with the
// --data files (each a file or ARCHIVE!/ENTRY).
func openModel(path string, data []string) (*loader.Model, error) {
	var maps []*mmapfile.File
	for _, d := range data {
		mf, err := openMapped(d)
		if err != nil {
			for _, m := range maps {
				m.Close()
			}
			return nil, fmt.Errorf("data file %s: %w", d, err)
		}
		maps = append(maps, mf)
	}
	mf, err := openMapped(path)
	if err != nil {
		for _, m := range maps {
			m.Close()
		}
		return nil, err
	}
	return loader.New(mf, loader.WithDataFiles(maps...))
}

// sniffPath sniffs a FILE argument (see loader.Sniff); an archive entry
// that cannot be located sniffs as Unknown, and opening it then says why.
func sniffPath(path string) (loader.Format, error) {
	if _, _, ok := splitArchive(path); !ok {
		return loader.SniffFile(path)
	}
	mf, err := openMapped(path)
	if err != nil {
		return loader.Unknown, err
	}
	defer mf.Close()
	head := make([]byte, min(mf.Len(), 4096))
	k, _ := mf.ReadAt(head, 0)
	return loader.Sniff(head[:k]), nil
}

// bundleRep describes the bundled program a model came from: in the JSON
// of inspect, "bundle".
type bundleRep struct {
	Version       uint32     `json:"version"`
	ProgramOffset int64      `json:"program_offset"`
	ProgramSize   int64      `json:"program_size"`
	BundleSize    int64      `json:"bundle_size"`
	TestSuites    []suiteRep `json:"test_suites"`
}

// suiteRep is one method test suite of a bundle.
type suiteRep struct {
	Method    string `json:"method"`
	TestCases int    `json:"test_cases"`
	Inputs    int    `json:"inputs"`           // values over all cases
	Outputs   int    `json:"expected_outputs"` // values over all cases
}

// describeBundle describes m's bundle, or returns nil if m was not opened
// from one.
func describeBundle(m *loader.Model) *bundleRep {
	b := m.Bundle()
	if b == nil {
		return nil
	}
	off, n := b.ProgramSection()
	r := &bundleRep{Version: b.Version(), ProgramOffset: off, ProgramSize: n, BundleSize: b.File().Len(), TestSuites: []suiteRep{}}
	for _, s := range b.TestSuites() {
		sr := suiteRep{Method: s.Method, TestCases: len(s.Cases)}
		for _, c := range s.Cases {
			sr.Inputs += len(c.Inputs)
			sr.Outputs += len(c.ExpectedOutputs)
		}
		r.TestSuites = append(r.TestSuites, sr)
	}
	return r
}

// printBundle writes the bundle section of inspect's text output.
func printBundle(w io.Writer, b *bundleRep) {
	if b == nil {
		return
	}
	section(w, "bundled program", -1)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  program\t%d bytes at offset %d of the %d-byte bundle (offsets below are the program's)\n", b.ProgramSize, b.ProgramOffset, b.BundleSize)
	fmt.Fprintf(tw, "  version\t%d\n", b.Version)
	tw.Flush()
	section(w, "method test suites", len(b.TestSuites))
	if len(b.TestSuites) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  METHOD\tTEST CASES\tINPUTS\tEXPECTED OUTPUTS\n")
		for _, s := range b.TestSuites {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\n", s.Method, s.TestCases, s.Inputs, s.Outputs)
		}
		tw.Flush()
	}
}

// bundleSummary is verify's note on a bundle's test data.
func bundleSummary(m *loader.Model, r loader.VerifyReport) string {
	b := m.Bundle()
	if b == nil {
		return ""
	}
	cases := 0
	for _, s := range b.TestSuites() {
		cases += len(s.Cases)
	}
	return fmt.Sprintf("; bundle: %d test suites, %d test cases, %d test tensors", len(b.TestSuites()), cases, r.TestTensors)
}
