package main

import (
	"sync"
	"sync/atomic"
)

// pool is a fixed set of goroutines that share the rows of one
// matrix-vector product at a time; the calling goroutine works too.
type pool struct {
	threads int
	start   chan struct{}
	wg      sync.WaitGroup

	// The product in progress: rows handed out in chunks by next.
	fn    func(lo, hi int)
	rows  int
	chunk int
	next  atomic.Int64

	touched atomic.Uint32 // the sum of the bytes matvec reads ahead, so that the reads are kept
}

// newPool starts threads−1 workers.
func newPool(threads int) *pool {
	p := &pool{threads: max(1, threads), start: make(chan struct{})}
	for range p.threads - 1 {
		go p.worker()
	}
	return p
}

func (p *pool) worker() {
	for range p.start {
		p.work()
		p.wg.Done()
	}
}

// close stops the workers.
func (p *pool) close() { close(p.start) }

func (p *pool) work() {
	for {
		lo := int(p.next.Add(int64(p.chunk))) - p.chunk
		if lo >= p.rows {
			return
		}
		p.fn(lo, min(lo+p.chunk, p.rows))
	}
}

// run calls fn over [0, rows) in chunks, on every thread, and returns when
// all rows are done. Chunks are taken as threads come free, so a thread
// slowed by other work on the machine takes fewer.
func (p *pool) run(rows int, fn func(lo, hi int)) {
	p.fn, p.rows = fn, rows
	p.chunk = max(1, rows/(8*p.threads))
	p.next.Store(0)
	if p.threads == 1 || rows < 2 {
		p.work()
		return
	}
	p.wg.Add(p.threads - 1)
	for range p.threads - 1 {
		p.start <- struct{}{}
	}
	p.work()
	p.wg.Wait()
}

// matrix is a weight matrix as GGUF stores it: rows of cols elements of
// type typ, each rowBytes long, back to back.
type matrix struct {
	typ        ggmlType
	rows, cols int
	rowBytes   int
	data       []byte
}

// kernel returns the dot-product kernel for t and makes the form of a it
// reads.
func kernel(t ggmlType, a *activation) func([]byte, *activation) float32 {
	switch t {
	case typeQ8_0:
		a.forQ8()
		return dotQ8_0
	case typeQ4_0:
		a.forQ8()
		return dotQ4_0
	case typeQ4_K:
		a.forK()
		return dotQ4_K
	case typeQ6_K:
		a.forK()
		return dotQ6_K
	case typeF16:
		a.forHalf()
		return dotF16
	}
	return dotF32
}

// matvec sets y[r] to the dot product of row r of m with the activation.
// Before each row it reads one byte of every cache line of the bytes a row's
// length further on (at least 4 KiB), so that those loads are in flight
// while the row is computed: the CPU's own prefetcher stops at page
// boundaries, and without this a row that spans two pages waits for memory.
func (p *pool) matvec(m matrix, a *activation, y []float32) {
	dot := kernel(m.typ, a)
	data, rb := m.data, m.rowBytes
	ahead := max(rb, 4096)
	y = y[:m.rows]
	p.run(m.rows, func(lo, hi int) {
		var touched byte
		for r := lo; r < hi; r++ {
			for i := (r+1)*rb + ahead - rb; i < min((r+2)*rb+ahead-rb, len(data)); i += 64 {
				touched += data[i]
			}
			y[r] = dot(data[r*rb:(r+1)*rb], a)
		}
		p.touched.Add(uint32(touched))
	})
}
