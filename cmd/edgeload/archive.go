package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/mmapfile"
)

// archiveEntry is one entry of inspect's listing of a zip archive.
type archiveEntry struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	Stored bool   `json:"stored"`
	Format string `json:"format,omitempty"` // a stored model's; "zip" for an archive inside
	Open   string `json:"open,omitempty"`   // the FILE argument that opens it
}

// inspectArchive writes, for a file that is no model but a zip archive
// (a MediaPipe .task bundle, an APK), the files it holds and the
// ARCHIVE!/ENTRY argument that opens each stored model. It returns false,
// writing nothing, when path is no zip archive.
func inspectArchive(w io.Writer, path string, asJSON bool) (ok bool, err error) {
	if _, _, inside := mmapfile.SplitArchivePath(path); inside {
		return false, nil
	}
	mf, err := mmapfile.Open(path)
	if err != nil {
		return false, nil
	}
	defer mf.Close()
	entries, err := loader.ArchiveEntries(mf, mf.Len())
	if err != nil {
		return false, nil
	}
	list := make([]archiveEntry, len(entries))
	for i, e := range entries {
		list[i] = archiveEntry{Name: e.Name, Size: e.Size, Stored: e.Stored}
		switch {
		case e.Format != loader.Unknown:
			list[i].Format, list[i].Open = e.Format.String(), mmapfile.ArchivePath(path, e.Name)
		case e.Archive:
			list[i].Format = "zip"
		}
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return true, enc.Encode(struct {
			File     string         `json:"file"`
			Format   string         `json:"format"`
			FileSize int64          `json:"file_size"`
			Entries  []archiveEntry `json:"entries"`
		}{path, "zip", mf.Len(), list})
	}
	ew := &errWriter{w: w}
	fileHeader(ew, path, "zip archive, not a model: open a model stored in it as ARCHIVE!/ENTRY", mf.Len())
	section(ew, "entries", len(list))
	tw := newTable(ew)
	fmt.Fprintf(tw, "  NAME\tSIZE\tFORMAT\tOPEN AS\n")
	for i, e := range list {
		open := e.Open
		switch {
		case open != "":
		case entries[i].Archive:
			open = "(a zip archive: extract it, then inspect it)"
		case !e.Stored:
			open = "(compressed: a model must be stored uncompressed to open in place)"
		default:
			open = "(not a model edgeload reads)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", e.Name, bytesName(e.Size), orDash(e.Format), open)
	}
	tw.Flush()
	return true, ew.err
}
