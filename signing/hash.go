package signing

import (
	"crypto/sha256"
	"hash"
	"sync/atomic"
)

// lineChunk is how much of a mapping Sum and Check.Write read ahead of
// the hash at a time: inside a core's L1 data cache.
const lineChunk = 16 << 10

// Sum returns the SHA-256 of the pieces' bytes in order: the sum that
// CheckSum takes for a range read in pieces.
//
// Like Check.Write it suits bytes straight from a file's mapping: it loads
// a byte of every cache line of a chunk before hashing the chunk, so the
// memory serves the independent loads together where SHA-256 asks for one
// line at a time.
func Sum(pieces ...[]byte) []byte {
	h := sha256.New()
	for _, p := range pieces {
		hashLines(h, p)
	}
	return h.Sum(nil)
}

// hashLines writes p to h a chunk at a time, each chunk's cache lines
// loaded first.
func hashLines(h hash.Hash, p []byte) {
	var x byte
	for len(p) > 0 {
		c := p[:min(len(p), lineChunk)]
		for i := 0; i < len(c); i += 64 {
			x += c[i]
		}
		h.Write(c)
		p = p[len(c):]
	}
	lineSink.Store(uint32(x))
}

// lineSink keeps hashLines' loads from being optimized away.
var lineSink atomic.Uint32
