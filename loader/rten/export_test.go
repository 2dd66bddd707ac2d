package rten

import (
	"fmt"

	"github.com/edgeload/edgeload/internal/fbverify"
)

// CheckVerified checks that a model that opened from data passes a
// verification of its whole FlatBuffer without the vtable cache, whose
// fast path Open verifies with: the cache must accept nothing the plain
// walk refuses.
func CheckVerified(data []byte, m *Model) error {
	h := m.Header()
	buf := data[h.ModelOffset : h.ModelOffset+h.ModelLen]
	opt := fbverify.Options{Format: fmtName, Base: h.ModelOffset, MaxDepth: 4*(DefaultMaxSubgraphDepth+1) + 8}
	if err := fbverify.Verify(buf, vModel, opt); err != nil {
		return fmt.Errorf("opened a model the verification without the vtable cache rejects: %v", err)
	}
	return nil
}
