package stream

import (
	"errors"
	"fmt"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/platform"
)

// AutoBudget returns a budget that fits this process's memory limit: the
// limit (platform.MemoryLimit: its memory cgroup's, or the machine's
// memory) less what the process holds now (its resident set) and less
// reserve, the memory it will allocate besides the stream's weights (a
// decode loop's KV cache and activations). The error says when the limit
// is unknown or leaves nothing.
func AutoBudget(reserve int64) (int64, error) {
	limit, ok := platform.MemoryLimit()
	if !ok {
		return 0, errors.New("stream: the memory limit is unknown on this system: give a budget")
	}
	rss, ok := platform.ResidentSet()
	if !ok {
		return 0, errors.New("stream: the process's resident set is unknown on this system: give a budget")
	}
	b := limit - rss - reserve
	if b <= 0 {
		return 0, fmt.Errorf("%w: the memory limit of %s less the %s the process holds and %s reserved leaves nothing for weights",
			ErrBudget, format.SizeName(limit), format.SizeName(rss), format.SizeName(reserve))
	}
	return b, nil
}
