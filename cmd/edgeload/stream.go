package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"time"

	"github.com/edgeload/edgeload/internal/sizeflag"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/stream"
)

const streamAbout = `Read every weight of a model in the order the model uses it, holding at
most --budget bytes of weight pages resident (see package stream): each
tensor and delegate blob is checksummed (CRC-32C, every byte read) and
released. Prints the bytes, tensors, wall time, throughput, the peak of
weight pages the stream held and the CPU time of the stream's background
reader (Linux). A progress bar goes to stderr when it is a
terminal. Sizes take the suffixes KiB, MiB, GiB and TiB, or plain bytes.`

// streamReport is what stream prints (as JSON with --json).
type streamReport struct {
	File       string  `json:"file"`
	Method     string  `json:"method,omitempty"`
	Budget     int64   `json:"budget"`
	Tensors    int     `json:"tensors"`
	Delegates  int     `json:"delegates"`
	Bytes      int64   `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	MBPerSec   float64 `json:"mb_per_s"`
	PeakBytes  int64   `json:"peak_resident_bytes"`
	StreamCPU  float64 `json:"stream_cpu_seconds"`
	StreamSys  float64 `json:"stream_system_cpu_seconds"`
	Checksum   string  `json:"crc32c"`
	DropCached bool    `json:"drop_cache"`
}

func runStream(c *cli, args []string) int {
	fs := newFlags(lookup("stream"), streamAbout)
	budget := sizeflag.Value(stream.DefaultBudget)
	fs.Var(&budget, "budget", "the most weight bytes to hold resident (`SIZE`, e.g. 64MiB)")
	method := fs.String("method", "", "stream one `NAME`d method of a .pte (default: every method in turn)")
	var data stringList
	fs.Var(&data, "data", "a `FILE.ptd` holding external tensors of the .pte (repeatable)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	drop := fs.Bool("drop-cache", false, "also drop streamed pages from the page cache")
	pos, code, ok := parse(c, fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(c, fs, "want exactly one FILE")
	}
	if budget <= 0 {
		return usageError(c, fs, "--budget must be more than 0")
	}
	m, err := openModel(pos[0], data)
	if err != nil {
		c.fileError(pos[0], err)
		return exitInvalid
	}
	defer m.Close()
	r, err := streamModel(m, int64(budget), *method, *drop, progressBar(c.stderr))
	if err != nil {
		c.errorf("%s: %v", pos[0], err)
		return exitInvalid
	}
	r.File = pos[0]
	if *asJSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		enc.Encode(r)
		return exitOK
	}
	fmt.Fprintf(c.stdout, "%s: %d tensors", r.File, r.Tensors)
	if r.Delegates > 0 {
		fmt.Fprintf(c.stdout, " and %d delegate blobs", r.Delegates)
	}
	fmt.Fprintf(c.stdout, ", %s in %.2fs (%.0f MB/s), peak resident %s of a %s budget, stream CPU %.0f ms (%.0f ms in the kernel), crc32c %s\n",
		sizeName(r.Bytes), r.Seconds, r.MBPerSec, sizeName(r.PeakBytes), sizeName(r.Budget), 1000*r.StreamCPU, 1000*r.StreamSys, r.Checksum)
	return exitOK
}

// streamModel streams every weight of m and checksums it.
func streamModel(m *loader.Model, budget int64, method string, drop bool, progress func(stream.Stats)) (*streamReport, error) {
	opts := []stream.Option{stream.WithBudget(budget), stream.WithMethod(method)}
	if drop {
		opts = append(opts, stream.WithDropCache())
	}
	if progress != nil {
		opts = append(opts, stream.WithProgress(progress))
	}
	start := time.Now()
	s, err := stream.New(context.Background(), m, opts...)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	r := &streamReport{Method: method, DropCached: drop}
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	for {
		it, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if err := it.Data.Checksum(h); err != nil {
			return nil, err
		}
		if it.Part == it.Parts-1 {
			if it.Tensor >= 0 {
				r.Tensors++
			} else {
				r.Delegates++
			}
		}
	}
	if progress != nil {
		progress(stream.Stats{}) // clears the bar
	}
	st := s.Stats()
	r.Seconds = time.Since(start).Seconds()
	r.Budget, r.Bytes, r.PeakBytes = st.Budget, st.Bytes, st.Peak
	r.StreamCPU, r.StreamSys = st.CPU.Seconds(), st.SystemCPU.Seconds()
	if r.Seconds > 0 {
		r.MBPerSec = float64(r.Bytes) / r.Seconds / 1e6
	}
	r.Checksum = fmt.Sprintf("%08x", h.Sum32())
	return r, nil
}

// progressBar returns a progress callback drawing a bar on w, or nil when w
// is not a terminal. A zero Stats clears the bar.
func progressBar(w io.Writer) func(stream.Stats) {
	if !isTerminal(w) {
		return nil
	}
	var last time.Time
	start := time.Now()
	return func(st stream.Stats) {
		if st.Items == 0 {
			fmt.Fprint(w, "\r\033[K")
			return
		}
		now := time.Now()
		if now.Sub(last) < 100*time.Millisecond && st.Done < st.Items {
			return
		}
		last = now
		frac := 1.0
		if st.Bytes > 0 {
			frac = float64(st.DoneBytes) / float64(st.Bytes)
		}
		const width = 30
		n := int(frac * width)
		rate := float64(st.DoneBytes) / time.Since(start).Seconds() / 1e6
		fmt.Fprintf(w, "\r[%s%s] %3.0f%% %s / %s  %.0f MB/s  resident %s\033[K", strings.Repeat("=", n), strings.Repeat(" ", width-n),
			100*frac, sizeName(st.DoneBytes), sizeName(st.Bytes), rate, sizeName(st.Resident))
	}
}
