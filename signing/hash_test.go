package signing

import (
	"bytes"
	"crypto/sha256"
	"testing"
)

// TestSum checks Sum against sha256 of the pieces joined, for pieces that
// end before, at and past hashLines' pieces and its distance ahead.
func TestSum(t *testing.T) {
	data := randBytes(3*hashAhead+100, 5)
	for _, cuts := range [][]int{
		{},
		{0},
		{1},
		{63, 64, 65},
		{hashPiece - 1},
		{hashPiece, hashPiece + 1},
		{hashAhead - 1},
		{hashAhead},
		{hashAhead + 1, 2 * hashAhead},
		{hashAhead + hashPiece + 3},
		{len(data)},
	} {
		var pieces [][]byte
		at := 0
		for _, c := range cuts {
			pieces = append(pieces, data[at:c])
			at = c
		}
		pieces = append(pieces, data[at:])
		want := sha256.Sum256(bytes.Join(pieces, nil))
		if got := Sum(pieces...); !bytes.Equal(got, want[:]) {
			t.Errorf("cuts %v: Sum %x, want %x", cuts, got, want)
		}
	}
	want := sha256.Sum256(nil)
	if got := Sum(); !bytes.Equal(got, want[:]) {
		t.Errorf("Sum() = %x, want %x", got, want)
	}
}
