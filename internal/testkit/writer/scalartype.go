package writer

import "github.com/edgeload/edgeload/internal/executorch"

// etElemSize returns the element size of an ExecuTorch ScalarType code (0
// for reserved or unknown codes, which tests write on purpose).
func etElemSize(st int8) int64 {
	d, msg := executorch.ScalarTypeDType(st)
	if msg != "" {
		return 0
	}
	return int64(d.Size())
}
