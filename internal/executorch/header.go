package executorch

import "encoding/binary"

// HeaderRoom returns a copy of the FlatBuffer fb (a 4-byte root offset, a
// 4-byte file identifier, then the tables) with n zero bytes inserted after
// its 8-byte prefix and the root offset moved past them: the room a format
// puts its header in (a .pte's "eh00", a .ptd's "FH01"). n keeps the
// tables' alignment when it is a multiple of 16.
func HeaderRoom(fb []byte, n int64) []byte {
	out := make([]byte, int64(len(fb))+n)
	copy(out, fb[:8])
	copy(out[8+n:], fb[8:])
	le := binary.LittleEndian
	le.PutUint32(out, le.Uint32(fb)+uint32(n))
	return out
}
