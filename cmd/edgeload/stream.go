package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/edgeload/edgeload/internal/sizeflag"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/stream"
)

const streamAbout = `Read every weight of a model in the order the model uses it, holding at
most --budget bytes of weights in memory (see package stream): each
tensor and delegate blob is checksummed (CRC-32C, every byte read) and
released. Prints the bytes, tensors, wall time, throughput, the peak of
weight bytes the stream held and the CPU time of the stream's background
reader (Linux). A progress bar goes to stderr when it is a terminal.

--passes N reads the order N times, as a decode loop reads every weight
once per token: --retain keeps that many bytes of weights resident across
passes (auto: as much as the budget holds after the streaming room), the
rest is read anew each pass, and a line of statistics is printed for each
pass (bytes read, time spent waiting for reads, peak resident). Every pass
must checksum the same. Sizes take the suffixes KiB, MiB, GiB and TiB, or
plain bytes.`

// streamReport is what stream prints (as JSON with --json).
type streamReport struct {
	File       string       `json:"file"`
	Method     string       `json:"method,omitempty"`
	Budget     int64        `json:"budget"`
	Tensors    int          `json:"tensors"`
	Delegates  int          `json:"delegates"`
	Bytes      int64        `json:"bytes"`
	Seconds    float64      `json:"seconds"`
	MBPerSec   float64      `json:"mb_per_s"`
	PeakBytes  int64        `json:"peak_resident_bytes"`
	StreamCPU  float64      `json:"stream_cpu_seconds"`
	StreamSys  float64      `json:"stream_system_cpu_seconds"`
	Checksum   string       `json:"crc32c"`
	DropCached bool         `json:"drop_cache"`
	Passes     int          `json:"passes"`
	Reader     string       `json:"reader"`
	Order      string       `json:"order"`
	Retained   int64        `json:"retained_bytes"`
	ReadBytes  int64        `json:"read_bytes"`
	Stall      float64      `json:"stall_seconds"`
	PassStats  []passReport `json:"pass_stats"`
	SignedBy   string       `json:"signed_by,omitempty"` // with --signature: who signed what every byte read matched
}

// passReport is one pass of a stream, in the report.
type passReport struct {
	Pass      int     `json:"pass"`
	Items     int     `json:"items"`
	Bytes     int64   `json:"bytes"`
	ReadBytes int64   `json:"read_bytes"`
	Stall     float64 `json:"stall_seconds"`
	Seconds   float64 `json:"seconds"`
	PeakBytes int64   `json:"peak_resident_bytes"`
	Retained  int64   `json:"retained_bytes"`
}

func runStream(c *cli, args []string) int {
	fs := newFlags(lookup("stream"), streamAbout)
	budget := sizeflag.Value(stream.DefaultBudget)
	fs.Var(&budget, "budget", "the most weight bytes to hold in memory (`SIZE`, e.g. 64MiB)")
	method := fs.String("method", "", "stream one `NAME`d method of a .pte (default: every method in turn)")
	var data stringList
	fs.Var(&data, "data", "a `FILE.ptd` holding external tensors of the .pte (repeatable)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	drop := fs.Bool("drop-cache", false, "also drop streamed pages from the page cache (always with --passes)")
	passes := fs.Int("passes", 1, "read the order `N` times")
	var retain int64
	fs.Func("retain", "keep `SIZE` bytes of weights resident across passes, or auto", func(s string) (err error) {
		if s == "auto" {
			retain = stream.RetainAuto
			return nil
		}
		retain, err = sizeflag.Parse(s)
		return err
	})
	var reader stream.Reader
	fs.Func("reader", "read streamed weights `auto`, mapped or direct", func(s string) error {
		for _, r := range []stream.Reader{stream.ReadAuto, stream.ReadMapped, stream.ReadDirect} {
			if s == r.String() {
				reader = r
				return nil
			}
		}
		return errors.New("want auto, mapped or direct")
	})
	sf := addSignatureFlags(fs)
	pos, code, ok := parse(c, fs, args)
	if !ok {
		return code
	}
	if msg := sf.usage(); msg != "" {
		return usageError(c, fs, msg)
	}
	if sf.given() && *passes != 1 {
		return usageError(c, fs, "--signature checks a single pass: no --passes")
	}
	if len(pos) != 1 {
		return usageError(c, fs, "want exactly one FILE")
	}
	if budget <= 0 {
		return usageError(c, fs, "--budget must be more than 0")
	}
	if *passes < 1 {
		return usageError(c, fs, "--passes must be at least 1")
	}
	m, err := openModel(pos[0], data)
	if err != nil {
		c.fileError(pos[0], err)
		return exitInvalid
	}
	defer m.Close()
	r := &streamReport{File: pos[0], Method: *method, DropCached: *drop, Passes: *passes}
	bar := progressBar(c.stderr)
	opts := []stream.Option{stream.WithBudget(int64(budget)), stream.WithMethod(*method), stream.WithPasses(*passes),
		stream.WithReader(reader), stream.WithRetain(retain), stream.WithProgress(bar)}
	if *drop {
		opts = append(opts, stream.WithDropCache())
	}
	if sf.given() {
		checks, b, err := sf.streamChecks(pos[0], m)
		if err != nil {
			c.fileError(pos[0], err)
			return exitInvalid
		}
		opts = append(opts, stream.WithSignature(checks))
		r.SignedBy = signerOf(b, sf)
		// The stream's reader spends most of its time blocked in reads,
		// which hold one of the runtime's Ps until the scheduler takes it
		// back: one P more than the cores keeps them all hashing.
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1))
	}
	if err := streamModel(m, r, bar, opts...); err != nil {
		c.errorf("%s: %v", pos[0], err)
		return exitInvalid
	}
	if *asJSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		enc.Encode(r)
		return exitOK
	}
	if r.Passes > 1 {
		for _, p := range r.PassStats {
			fmt.Fprintf(c.stdout, "pass %d: %s read in %.2fs, %.2fs waiting for reads, peak resident %s\n",
				p.Pass, sizeName(p.ReadBytes), p.Seconds, p.Stall, sizeName(p.PeakBytes))
		}
	}
	fmt.Fprintf(c.stdout, "%s: %d tensors", r.File, r.Tensors)
	if r.Delegates > 0 {
		fmt.Fprintf(c.stdout, " and %d delegate blobs", r.Delegates)
	}
	if r.Passes > 1 {
		fmt.Fprintf(c.stdout, " × %d passes (%s retained, %s reader)", r.Passes, sizeName(r.Retained), r.Reader)
	}
	fmt.Fprintf(c.stdout, ", %s in %.2fs (%.0f MB/s), peak resident %s of a %s budget, stream CPU %.0f ms (%.0f ms in the kernel), crc32c %s",
		sizeName(r.Bytes), r.Seconds, r.MBPerSec, sizeName(r.PeakBytes), sizeName(r.Budget), 1000*r.StreamCPU, 1000*r.StreamSys, r.Checksum)
	if r.Order == "file" {
		fmt.Fprint(c.stdout, " (file order: the format records no order of use)")
	}
	if r.SignedBy != "" {
		fmt.Fprintf(c.stdout, "; every byte matches the signature by %s", r.SignedBy)
	}
	fmt.Fprintln(c.stdout)
	return exitOK
}

// streamModel streams every weight of m with opts, r.Passes times, and
// fills in r; every pass must give the first one's checksum. bar, when not
// nil, is the progress bar to clear at the end.
func streamModel(m *loader.Model, r *streamReport, bar func(stream.Stats), opts ...stream.Option) error {
	start := time.Now()
	s, err := stream.New(context.Background(), m, opts...)
	if err != nil {
		return err
	}
	defer s.Close()
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	var first uint32
	pass := 0
	endPass := func() error {
		if pass == 0 {
			first = h.Sum32()
		} else if h.Sum32() != first {
			return fmt.Errorf("pass %d read different bytes: crc32c %08x, pass 0 %08x", pass, h.Sum32(), first)
		}
		h.Reset()
		return nil
	}
	for {
		it, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if it.Pass != pass {
			if err := endPass(); err != nil {
				return err
			}
			pass = it.Pass
		}
		if err := it.Data.Checksum(h); err != nil {
			return err
		}
		if it.Part == it.Parts-1 && it.Pass == 0 {
			if it.Tensor >= 0 {
				r.Tensors++
			} else {
				r.Delegates++
			}
		}
	}
	if err := endPass(); err != nil {
		return err
	}
	if bar != nil {
		bar(stream.Stats{}) // clears the bar
	}
	st := s.Stats()
	r.Seconds = time.Since(start).Seconds()
	r.Budget, r.Bytes, r.PeakBytes = st.Budget, st.Bytes*int64(r.Passes), st.Peak
	r.StreamCPU, r.StreamSys = st.CPU.Seconds(), st.SystemCPU.Seconds()
	r.Reader, r.Order, r.Retained, r.ReadBytes, r.Stall = st.Reader, st.Order, st.Retained, st.Read, st.Stall.Seconds()
	for _, p := range s.Passes() {
		r.PassStats = append(r.PassStats, passReport{Pass: p.Pass, Items: p.Items, Bytes: p.Bytes, ReadBytes: p.Read,
			Stall: p.Stall.Seconds(), Seconds: p.Wall.Seconds(), PeakBytes: p.Peak, Retained: p.Retained})
	}
	if r.Seconds > 0 {
		r.MBPerSec = float64(r.Bytes) / r.Seconds / 1e6
	}
	r.Checksum = fmt.Sprintf("%08x", first)
	return nil
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
		pass := ""
		if st.Passes != 1 {
			pass = fmt.Sprintf("pass %d/%d ", st.Pass+1, st.Passes)
		}
		rate := float64(st.Read) / time.Since(start).Seconds() / 1e6
		fmt.Fprintf(w, "\r%s[%s%s] %3.0f%% %s / %s  read %.0f MB/s  resident %s\033[K", pass, strings.Repeat("=", n), strings.Repeat(" ", width-n),
			100*frac, sizeName(st.DoneBytes), sizeName(st.Bytes), rate, sizeName(st.Resident))
	}
}
