package pte

import (
	"encoding/binary"
	"math"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/loader/format"
)

// Extended header layout (FORMATS.md §1), offsets from the file's start.
const (
	ehMagic          = "eh00"
	ehStart          = 8  // the header starts after the 8-byte prefix
	ehMinLength      = 24 // through segment_base_offset
	ehDataSizeLength = 32 // through segment_data_size
	headerPeek       = 64 // bytes read to parse the prefix and header
)

// isDigit reports whether c is an ASCII digit.
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// parseHeader parses the prefix and the optional extended header from the
// first bytes of the file (head, at most headerPeek of them), for a file of
// size bytes.
func parseHeader(head []byte, size int64) (Header, error) {
	var h Header
	if size < 8 || len(head) < 8 {
		return h, format.Wrapf(format.ErrTruncated, formatName, "", 0,
			"file of %d bytes is shorter than the 8-byte FlatBuffer prefix of an ExecuTorch program", size)
	}
	h.RootOffset = binary.LittleEndian.Uint32(head[0:4])
	id := head[4:8]
	if h.Identifier = Identifier; string(id) != Identifier { // the constant: no copy to allocate
		h.Identifier = string(id)
		if id[0] == 'E' && id[1] == 'T' && isDigit(id[2]) && isDigit(id[3]) {
			return h, format.Wrapf(format.ErrUnsupportedVersion, formatName, "identifier", 4,
				"program identifier %q is a version this loader cannot read (want %q)", h.Identifier, Identifier)
		}
		return h, format.Wrapf(format.ErrUnknownFormat, formatName, "identifier", 4,
			"not an ExecuTorch program (identifier %q at offset 4)", id)
	}
	h.ProgramSize = size
	if len(head) < ehStart+4 || string(head[ehStart:ehStart+4]) != ehMagic {
		// No extended header: the whole file is the FlatBuffer.
		if size > fbverify.MaxSize {
			return h, format.Errorf(formatName, "", 0,
				"file of %d bytes has no extended header, so all of it would be FlatBuffer, which is limited to 2 GiB", size)
		}
		return h, nil
	}
	h.Extended = true
	if len(head) < ehStart+ehMinLength {
		return h, format.Wrapf(format.ErrTruncated, formatName, "extended_header", ehStart,
			"file of %d bytes ends inside the extended header", size)
	}
	h.Length = binary.LittleEndian.Uint32(head[12:16])
	if h.Length < ehMinLength {
		return h, format.Errorf(formatName, "extended_header.length", 12,
			"extended header length %d is shorter than the minimum of %d bytes (want at least %[2]d)", h.Length, ehMinLength)
	}
	hdrEnd := int64(ehStart) + int64(h.Length)
	if hdrEnd > size {
		return h, format.Wrapf(format.ErrTruncated, formatName, "extended_header.length", 12,
			"extended header of %d bytes ends at %d, past the end of the %d-byte file", h.Length, hdrEnd, size)
	}
	ps := binary.LittleEndian.Uint64(head[16:24])
	base := binary.LittleEndian.Uint64(head[24:32])
	switch {
	case ps < uint64(hdrEnd):
		return h, format.Errorf(formatName, "extended_header.program_size", 16,
			"program_size %d is smaller than the headers it must include (%d bytes)", ps, hdrEnd)
	case ps > uint64(size):
		return h, format.Wrapf(format.ErrTruncated, formatName, "extended_header.program_size", 16,
			"program_size %d exceeds the file's %d bytes: file truncated (want at most %[2]d)", ps, size)
	case ps > fbverify.MaxSize:
		return h, format.Errorf(formatName, "extended_header.program_size", 16,
			"program_size %d exceeds the 2 GiB FlatBuffer limit", ps)
	}
	h.ProgramSize = int64(ps)
	if base != 0 {
		if base < ps {
			return h, format.Errorf(formatName, "extended_header.segment_base_offset", 24,
				"segment_base_offset %d lies inside the program (program_size %d): want at least %[2]d", base, ps)
		}
		if base > uint64(size) {
			return h, format.Wrapf(format.ErrTruncated, formatName, "extended_header.segment_base_offset", 24,
				"segment_base_offset %d is past the end of the %d-byte file: file truncated", base, size)
		}
	}
	h.SegmentBase = int64(base)
	if h.Length >= ehDataSizeLength {
		ds := binary.LittleEndian.Uint64(head[32:40])
		if ds > math.MaxInt64 {
			return h, format.Errorf(formatName, "extended_header.segment_data_size", 32,
				"segment_data_size %d overflows a 64-bit file offset", ds)
		}
		h.SegmentDataSize, h.SegmentDataSizeKnown = int64(ds), true
		if base != 0 {
			if h.SegmentDataSize > math.MaxInt64-h.SegmentBase {
				return h, format.Errorf(formatName, "extended_header.segment_data_size", 32,
					"segment_base_offset %d + segment_data_size %d overflows", base, ds)
			}
			if end := h.SegmentBase + h.SegmentDataSize; end > size {
				return h, format.Wrapf(format.ErrTruncated, formatName, "extended_header.segment_data_size", 32,
					"file is %d bytes but its header says segment data ends at %d (segment_base_offset %d + segment_data_size %d): file truncated (want at least %[2]d bytes)",
					size, end, base, ds)
			}
		}
	}
	return h, nil
}

// Put writes h's extended header ("eh00", Length, ProgramSize, SegmentBase
// and, for a Length of 32 or more, SegmentDataSize) into b, the first
// bytes of a program that has room for it after its 8-byte prefix
// (executorch.HeaderRoom with format.AlignUp(Length, 16)).
func (h Header) Put(b []byte) {
	le := binary.LittleEndian
	copy(b[ehStart:], ehMagic)
	le.PutUint32(b[12:], h.Length)
	le.PutUint64(b[16:], uint64(h.ProgramSize))
	le.PutUint64(b[24:], uint64(h.SegmentBase))
	if h.Length >= ehDataSizeLength {
		le.PutUint64(b[32:], uint64(h.SegmentDataSize))
	}
}
