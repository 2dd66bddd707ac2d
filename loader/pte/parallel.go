package pte

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/edgeload/edgeload/loader/internal/fbverify"
)

// A large plan's values are read in parallel chunks, one builder copy a
// worker, each with its own FlatBuffer reader, walk and budget. A chunk's
// work does not depend on the others': every value is verified and checked
// on its own, against limits (the object count, the work budget) that are
// sums, and each worker gets an equal share of what is left of both. So
// when every worker succeeds, reading the values in order would have
// succeeded with the same records; the workers' records are then joined
// in value order. When any worker fails, the values are read again in
// order on the calling goroutine, which finds the error an in-order
// reading reports first. A hostile file therefore costs at most its
// in-order reading twice.

// defaultPerWorker is the least number of values a worker takes: below a
// few thousand values, waking another thread costs about what it saves
// (measured on 2 vCPUs: no gain at 1024-4096 tensors, 1.2x at 10,000,
// 1.45x at 100,000).
const defaultPerWorker = 4096

// parallelReads counts the plans read in parallel (for tests).
var parallelReads atomic.Int64

// maxWorkers bounds the goroutines one plan is read on.
const maxWorkers = 16

// values reads values [lo, hi) of plan i in order (vt has one entry per
// value of the plan, vstart is the position of its values vector).
func (b *builder) values(i int, m *Method, vt []int32, vstart int64, lo, hi int) error {
	nv := len(vt)
	for v := lo; v < hi; v++ {
		// The lane, unless it was last armed for the vtables the reader
		// holds now and found it cannot read their tables (arm would say
		// so again: a program's other values skip the call).
		if b.ln.ok || !b.ln.armedFor(&b.r) {
			if v = b.lane(m, vt, vstart, v, hi); v == hi {
				break
			}
		}
		e, ok := b.r.deref(vstart + 4*int64(v))
		if !ok {
			return errFast
		}
		t, err := b.value(i, m, v, nv, e)
		if err != nil {
			return err
		}
		vt[v] = t
	}
	return nil
}

// valuesParallel reads every value of plan i on several goroutines, and
// reports false (having changed nothing b keeps) when the plan is too
// small for that or the reading failed: the caller then reads the values
// in order.
func (b *builder) valuesParallel(i int, m *Method, vt []int32, vstart int64) bool {
	nv := len(vt)
	per := b.perWorker
	if per <= 0 {
		per = defaultPerWorker
	}
	k := min(maxWorkers, nv/per)
	if k < 2 {
		return false // a small plan: no need to ask the runtime
	}
	if b.workers > 0 {
		k = min(k, b.workers)
	} else {
		k = min(k, runtime.GOMAXPROCS(0))
	}
	if k < 2 {
		return false
	}
	b.r.syncWalk() // b.r.left: what the workers may visit between them
	left, budget := b.r.left, b.budget
	// Each worker gets an equal share of both limits, so that a hostile
	// plan costs no more than its in-order reading would (plus that
	// reading, when the parallel one fails). A plan that needs more of
	// either than a share in one chunk is read in order.
	wleft, wbudget := max(left, 0)/k, max(budget, 0)/int64(k)
	// Every value makes at most one record, so worker w's fit in the
	// room for values [lo, hi) after those already read.
	base := len(b.recs)
	all := slices.Grow(b.recs, nv)[:base+nv]
	ws := make([]builder, k)
	errs := make([]error, k)
	var wg sync.WaitGroup
	for w := k - 1; w >= 0; w-- {
		lo, hi := nv*w/k, nv*(w+1)/k
		wb := &ws[w]
		*wb = *b
		wo := b.vo
		wo.MaxObjects = wleft
		wb.r = newFBR(b.r.b, fbverify.NewWalk(b.fb, wo))
		wb.budget = wbudget
		wb.dims = nil // its own scratch: the workers run at once
		wb.recs = all[base+lo : base+lo : base+hi]
		wb.recBase = int32(base + lo)
		wb.external = 0
		if w == 0 {
			errs[w] = wb.values(i, m, vt, vstart, lo, hi)
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = wb.values(i, m, vt, vstart, lo, hi)
		}()
	}
	wg.Wait()
	var spent int64
	objects, external := 0, 0
	for w := range ws {
		if errs[w] != nil {
			return false
		}
		spent += wbudget - ws[w].budget
		objects += wleft - ws[w].r.left
		external += ws[w].external
	}
	// Join the records in value order, renumbering those that move.
	n := base
	for w := range ws {
		lo, hi := nv*w/k, nv*(w+1)/k
		got := ws[w].recs
		if shift := int32(n - (base + lo)); shift != 0 {
			copy(all[n:], got)
			for v := lo; v < hi; v++ {
				if vt[v] >= 0 {
					vt[v] += shift
				}
			}
		}
		n += len(got)
	}
	b.recs = all[:n]
	b.budget -= spent
	b.r.left -= objects
	b.external += external
	parallelReads.Add(1)
	return true
}
