// Package format is the seam every model format plugs into, and the
// vocabulary the formats share: the Model interface a format package
// implements and the Registration it registers (Register) for package
// loader, the optional interfaces a format adds (Reporter, Relayouter,
// ...), the FormatError type and its sentinels, the element types (DType,
// with the packed and block types of GGUF, safetensors and TFLite), and the
// places a tensor's bytes can live (Location).
//
// It sits below the format packages (loader/pte, loader/gguf, ...) and
// package loader, which imports none of them: each format registers itself
// here when it is imported, and loader finds it here.
package format

import (
	"errors"
	"fmt"

	"github.com/edgeload/edgeload/mmapfile"
)

// Sentinel errors, usable with errors.Is on any error the loaders return.
var (
	// ErrUnknownFormat: the bytes are not a file of a format edgeload reads.
	ErrUnknownFormat = errors.New("unknown file format")
	// ErrUnsupportedVersion: the file is of a known format, but of a version
	// (file identifier, header or schema version) this loader cannot read.
	ErrUnsupportedVersion = errors.New("unsupported format version")
	// ErrTruncated: the file is shorter than its headers say, or it shrank
	// while it was mapped.
	ErrTruncated = mmapfile.ErrTruncated
	// ErrNotFound: a lookup by name, key or index found nothing.
	ErrNotFound = errors.New("not found")
	// ErrClosed: the model (and its mapping) was closed.
	ErrClosed = mmapfile.ErrClosed
	// ErrCompressed: a zip entry (an APK asset, a .ptn member) is stored
	// compressed, so it cannot be mapped in place.
	ErrCompressed = mmapfile.ErrCompressed
	// ErrMalformed: the file's structure is inconsistent (an offset outside
	// its region, an index out of range, a bad FlatBuffer). Every
	// *FormatError without a more specific sentinel wraps it.
	ErrMalformed = errors.New("malformed file")
)

// FormatError describes a problem with a file's content: which format, which
// field, where in the file, and what was wrong. It mirrors debug/elf's
// FormatError, with the field named as a path into the file's tables
// (for example "Program.execution_plan[0].values[7].val").
type FormatError struct {
	Format string // the Name of the format's Registration: "pte", "gguf", ...
	Field  string // the header field or table path; may be empty
	Offset int64  // absolute file offset of the offending bytes; -1 if unknown
	Msg    string // what was wrong, including what was expected
	Err    error  // the sentinel this error wraps (ErrMalformed when nil)
}

// Error formats the error as "pte: Program.segments[2].offset at offset 0x1c8: msg".
func (e *FormatError) Error() string {
	s := e.Format + ": "
	switch {
	case e.Field != "" && e.Offset >= 0:
		s += fmt.Sprintf("%s at offset %#x: ", e.Field, e.Offset)
	case e.Field != "":
		s += e.Field + ": "
	case e.Offset >= 0:
		s += fmt.Sprintf("at offset %#x: ", e.Offset)
	}
	return s + e.Msg
}

// Unwrap returns the sentinel the error belongs to, so that errors.Is works.
func (e *FormatError) Unwrap() error {
	if e.Err == nil {
		return ErrMalformed
	}
	return e.Err
}

// Errorf builds a *FormatError wrapping ErrMalformed.
func Errorf(fmtName, field string, off int64, msg string, args ...any) *FormatError {
	return &FormatError{Format: fmtName, Field: field, Offset: off, Msg: fmt.Sprintf(msg, args...)}
}

// Wrapf builds a *FormatError wrapping the given sentinel.
func Wrapf(sentinel error, fmtName, field string, off int64, msg string, args ...any) *FormatError {
	return &FormatError{Format: fmtName, Field: field, Offset: off, Msg: fmt.Sprintf(msg, args...), Err: sentinel}
}
