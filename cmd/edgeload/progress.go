package main

import (
	"fmt"
	"io"
	"time"
)

// progress shows on a terminal how far a long task is: one line, redrawn
// in place at most every progressEvery, first once the task has run
// progressAfter; clear erases it.
type progress struct {
	w     io.Writer
	label string
	start time.Time
	last  time.Time // when the line was last drawn; zero before
}

// Timing of the progress line.
const (
	progressAfter = time.Second
	progressEvery = 100 * time.Millisecond
)

// clock is the time progress lines see (tests replace it).
var clock = time.Now

// newProgress returns a progress line on stderr, or nil when stderr is not
// a terminal.
func (c *cli) newProgress(label string) *progress {
	if !terminal(c.stderr) {
		return nil
	}
	return &progress{w: c.stderr, label: label, start: clock()}
}

// update draws "LABEL: 1.2 GiB of 4.0 GiB (30%)" when it is time to.
func (p *progress) update(done, total int64) {
	t := clock()
	if t.Sub(p.start) < progressAfter || (!p.last.IsZero() && t.Sub(p.last) < progressEvery && done < total) {
		return
	}
	p.last = t
	pct := int64(100)
	if total > 0 {
		pct = int64(float64(done) / float64(total) * 100)
	}
	fmt.Fprintf(p.w, "\r\x1b[Kedgeload: %s: %s of %s (%d%%)", p.label, sizeName(done), sizeName(total), pct)
}

// updater returns p.update, or nil for a nil progress.
func (p *progress) updater() func(done, total int64) {
	if p == nil {
		return nil
	}
	return p.update
}

// clear erases the line, if it was drawn. A nil progress does nothing.
func (p *progress) clear() {
	if p == nil || p.last.IsZero() {
		return
	}
	fmt.Fprint(p.w, "\r\x1b[K")
	p.last = time.Time{}
}
