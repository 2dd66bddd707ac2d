package rten

import (
	"encoding/binary"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/loader/format"
)

// HeaderSize is the size of the V2 header.
const HeaderSize = 32

// Magic is the first four bytes of a V2 file. A file that does not start
// with it is read as a headerless V1 file.
const Magic = "RTEN"

// Header describes where a file's parts are. For a V1 file (no header) the
// model data is the whole file and there is no tensor data section.
type Header struct {
	// Version is 2 for a file with the RTEN header, 1 for a headerless file.
	Version int
	// ModelOffset and ModelLen locate the Model FlatBuffer (0 and the file
	// size for V1).
	ModelOffset int64
	ModelLen    int64
	// TensorDataOffset is where the tensor data section starts (it runs to
	// the end of the file); external constants' data_offset values are
	// relative to it. 0 for V1, which has no such section.
	TensorDataOffset int64
}

const fmtName = "rten"

// parseHeader reads the header from the first min(size, 32) bytes of a file
// of size bytes. Every offset is checked against the file with
// overflow-safe arithmetic; an RTEN file of a version other than 2 is an
// error, never a V1 fallback.
func parseHeader(b []byte, size int64) (Header, error) {
	if size < 4 || string(b[:4]) != Magic {
		if size > fbverify.MaxSize {
			return Header{}, format.Errorf(fmtName, "", 0,
				"file of %d bytes has no %q header and is too large for a V1 model (a FlatBuffer must be < 2 GiB)", size, Magic)
		}
		return Header{Version: 1, ModelOffset: 0, ModelLen: size}, nil
	}
	if size < HeaderSize {
		return Header{}, format.Wrapf(format.ErrTruncated, fmtName, "header", 0,
			"file of %d bytes starts with %q but is shorter than the %d-byte V2 header (want at least %[3]d bytes)", size, Magic, HeaderSize)
	}
	le := binary.LittleEndian
	if v := le.Uint32(b[4:]); v != 2 {
		return Header{}, format.Wrapf(format.ErrUnsupportedVersion, fmtName, "header.version", 4,
			"version %d; want 2 (this loader reads version 2, and headerless version 1 files)", v)
	}
	mo, ml, td := le.Uint64(b[8:]), le.Uint64(b[16:]), le.Uint64(b[24:])
	usize := uint64(size)
	switch {
	case mo < HeaderSize:
		return Header{}, format.Errorf(fmtName, "header.model_offset", 8,
			"model data offset %d overlaps the %d-byte header (want at least %[2]d)", mo, HeaderSize)
	case mo > usize:
		return Header{}, format.Wrapf(format.ErrTruncated, fmtName, "header.model_offset", 8,
			"model data offset %d is past the end of the file (%d bytes): want at most %[2]d", mo, size)
	case ml > usize-mo:
		return Header{}, format.Wrapf(format.ErrTruncated, fmtName, "header.model_len", 16,
			"model data [%d, %d+%d) runs past the end of the file (%d bytes): want model_len at most %d", mo, mo, ml, size, usize-mo)
	case ml > fbverify.MaxSize:
		return Header{}, format.Errorf(fmtName, "header.model_len", 16,
			"model data of %d bytes exceeds the 2 GiB FlatBuffer limit", ml)
	case td > usize:
		return Header{}, format.Wrapf(format.ErrTruncated, fmtName, "header.tensor_data_offset", 24,
			"tensor data offset %d is past the end of the file (%d bytes): want at most %[2]d", td, size)
	case td < mo+ml: // mo+ml <= usize: no overflow
		return Header{}, format.Errorf(fmtName, "header.tensor_data_offset", 24,
			"tensor data offset %d lies before the end of the model data [%d, %d): want at least %[3]d", td, mo, mo+ml)
	}
	return Header{Version: 2, ModelOffset: int64(mo), ModelLen: int64(ml), TensorDataOffset: int64(td)}, nil
}

// Append appends the 32-byte header of a V2 file to b: "RTEN", Version,
// ModelOffset, ModelLen, TensorDataOffset.
func (h Header) Append(b []byte) []byte {
	le := binary.LittleEndian
	b = append(b, Magic...)
	b = le.AppendUint32(b, uint32(h.Version))
	b = le.AppendUint64(b, uint64(h.ModelOffset))
	b = le.AppendUint64(b, uint64(h.ModelLen))
	return le.AppendUint64(b, uint64(h.TensorDataOffset))
}
