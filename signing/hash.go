package signing

import (
	"crypto/sha256"
	"hash"
	"sync/atomic"
)

// hashAhead is how far ahead of the hash hashLines loads a mapping's
// cache lines, and hashPiece how much it hashes between loads.
const (
	hashAhead = 4 << 10
	hashPiece = 1 << 10
)

// Sum returns the SHA-256 of the pieces' bytes in order: the sum that
// CheckSum takes for a range read in pieces.
//
// Like Check.Write it suits bytes straight from a file's mapping: while it
// hashes one KiB it loads a byte of each cache line 4 KiB ahead, so the
// memory serves those independent loads during the hash, where SHA-256
// alone asks for one line at a time.
func Sum(pieces ...[]byte) []byte {
	h := sha256.New()
	for _, p := range pieces {
		hashLines(h, p)
	}
	return h.Sum(nil)
}

// hashLines writes p to h a piece at a time, loading a byte of each
// cache line hashAhead bytes further on before each piece.
func hashLines(h hash.Hash, p []byte) {
	var x byte
	for i := 0; i < min(len(p), hashAhead); i += 64 {
		x += p[i]
	}
	for len(p) > 0 {
		n := min(len(p), hashPiece)
		for i := hashAhead; i < min(len(p), hashAhead+n); i += 64 {
			x += p[i]
		}
		h.Write(p[:n])
		p = p[n:]
	}
	lineSink.Store(uint32(x))
}

// lineSink keeps hashLines' loads from being optimized away.
var lineSink atomic.Uint32
