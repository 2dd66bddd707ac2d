package tflite

import "github.com/edgeload/edgeload/mmapfile"

// VerifyRegion runs the FlatBuffer verification alone (the structural
// checks, those LiteRT's flatbuffers::Verifier makes), for the tests that
// compare it with LiteRT's.
func VerifyRegion(mf *mmapfile.File) error {
	_, err := verify(mf)
	return err
}
