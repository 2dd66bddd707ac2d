// Command llama runs a Llama model from a GGUF file: a pure-Go forward pass
// (RMSNorm, RoPE, grouped-query attention with a KV cache, SwiGLU) over
// f32, f16, q8_0, q4_0, q4_K and q6_K weights, decoding greedily from given
// token ids. It reads the weights with edgeload's public API: by default
// through package stream, in the order the pass uses them under a byte
// budget, so a model larger than RAM runs; with -mode mmap straight from the
// mapping, leaving residency to the kernel.
//
// Usage:
//
//	go run ./examples/llama -model FILE -ids 1,2,3 -n 32 [-budget SIZE|auto] [-retain SIZE|auto] [-mode schedule|mmap] [-reader auto|mapped|direct] [-threads N]
//
// It prints the generated token ids on one line, separated by spaces, and
// then one line of statistics to standard error: the passes run (one per
// token, prompt included), milliseconds per pass, and the schedule's bytes
// read per pass, time spent waiting for weights, peak resident weight bytes
// and bytes retained across passes; where the system reports them, also the
// bytes the process read from storage per pass and its peak resident set.
// Sizes take the suffixes B, KiB, MiB, GiB and TiB (or K, M, G, T).
//
// There is no tokenizer: -ids are token ids of the model's vocabulary.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/stream"
)

// options are the command's flags.
type options struct {
	model          string
	ids            []int
	n              int
	budget, retain int64 // -1 for auto
	reader         stream.Reader
	mode           string
	threads        int
}

// result is what a run produced.
type result struct {
	tokens  []int       // the generated tokens
	logits  [][]float32 // each pass's logits, when asked for
	passes  int
	passMS  []float64 // each pass's milliseconds
	budget  int64     // the schedule's budget
	elapsed time.Duration
	stats   passStats
	ioRead  int64 // bytes the process read from storage during the passes; -1 if unknown
}

// generate runs the prompt and n greedy steps: one pass per prompt token and
// per generated token but the last.
func generate(ctx context.Context, o options, keepLogits bool) (res result, err error) {
	if len(o.ids) == 0 {
		return res, errors.New("no token ids")
	}
	if o.n < 0 {
		return res, fmt.Errorf("-n %d: want at least 0", o.n)
	}
	m, err := loader.Open(o.model) // reads GGUF alone: the only format this program imports
	if errors.Is(err, loader.ErrUnknownFormat) {
		return res, fmt.Errorf("%s is not GGUF: %w", o.model, err)
	}
	if err != nil {
		return res, err
	}
	defer m.Close()
	md, err := openModel(m)
	if err != nil {
		return res, fmt.Errorf("%s: %w", o.model, err)
	}
	var w weights
	var sw *scheduleWeights
	switch o.mode {
	case "schedule":
		if o.budget < 0 {
			if o.budget, err = stream.AutoBudget(reserve(md.cfg, len(o.ids)+o.n)); err != nil {
				return res, err
			}
		}
		res.budget = o.budget
		if sw, err = newScheduleWeights(ctx, m, md.order, o.budget, o.retain, o.reader); err != nil {
			return res, err
		}
		w = sw
	case "mmap":
		w = &mmapWeights{m: m}
	default:
		return res, fmt.Errorf("-mode %q: want schedule or mmap", o.mode)
	}
	defer func() {
		if cerr := w.close(); err == nil {
			err = cerr
		}
	}()
	p := newPool(o.threads)
	defer p.close()
	r := newRunner(md, w, p, len(o.ids)+o.n)

	io0 := readBytes()
	t0 := time.Now()
	tok := o.ids[0]
	for i := range len(o.ids) + o.n - 1 {
		if i < len(o.ids) {
			tok = o.ids[i]
		}
		p0 := time.Now()
		logits, err := r.step(tok)
		if err != nil {
			return res, err
		}
		res.passMS = append(res.passMS, float64(time.Since(p0).Microseconds())/1000)
		res.passes++
		if keepLogits {
			res.logits = append(res.logits, append([]float32(nil), logits...))
		}
		if i >= len(o.ids)-1 {
			tok = argmax(logits)
			res.tokens = append(res.tokens, tok)
		}
	}
	res.elapsed = time.Since(t0)
	if io1 := readBytes(); io0 >= 0 && io1 >= 0 {
		res.ioRead = io1 - io0
	} else {
		res.ioRead = -1
	}
	if sw != nil {
		if err := sw.close(); err != nil {
			return res, err
		}
		res.stats = sw.stats
	}
	return res, nil
}

// parseSize parses a byte count with an optional B, KiB, MiB, GiB or TiB
// suffix (K, M, G, T alone too, case-insensitive).
func parseSize(s string) (int64, error) {
	num := strings.TrimRight(s, "BbKkMmGgTtIi ")
	unit := strings.ToLower(strings.TrimSpace(s[len(num):]))
	shifts := map[string]uint{"": 0, "b": 0, "k": 10, "kib": 10, "m": 20, "mib": 20, "g": 30, "gib": 30, "t": 40, "tib": 40}
	shift, ok := shifts[unit]
	n, err := strconv.ParseInt(num, 10, 64)
	if !ok || err != nil || n < 0 || n > 1<<62>>shift {
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional KiB, MiB, GiB or TiB", s)
	}
	return n << shift, nil
}

// parseIDs parses comma-separated token ids.
func parseIDs(s string) ([]int, error) {
	var ids []int
	for f := range strings.SplitSeq(s, ",") {
		id, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || id < 0 {
			return nil, fmt.Errorf("-ids %q: want comma-separated token ids", s)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func mib(n int64) string { return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + "MiB" }

func main() {
	log := func(err error) {
		fmt.Fprintln(os.Stderr, "llama:", err)
		os.Exit(1)
	}
	var o options
	var ids, budget, retain string
	flag.StringVar(&o.model, "model", "", "the GGUF `file`")
	flag.StringVar(&ids, "ids", "", "the prompt's token `ids`, comma-separated")
	flag.IntVar(&o.n, "n", 32, "the number of tokens to generate")
	flag.StringVar(&budget, "budget", strconv.Itoa(stream.DefaultBudget), "the schedule's byte `budget` for weights, or auto: the process's memory limit less what it holds and will allocate")
	flag.StringVar(&retain, "retain", "0", "bytes of weights kept resident across passes, or auto")
	flag.StringVar(&o.mode, "mode", "schedule", "how weights are read: schedule (package stream) or mmap (page faults)")
	reader := flag.String("reader", "auto", "how the schedule reads streamed weights: auto, mapped or direct")
	flag.IntVar(&o.threads, "threads", runtime.GOMAXPROCS(0), "threads for the matrix products")
	flag.Parse()
	if o.model == "" || ids == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: llama -model FILE -ids 1,2,3 [-n 32] [-budget SIZE|auto] [-retain SIZE|auto] [-mode schedule|mmap] [-reader auto|mapped|direct] [-threads N]")
		os.Exit(2)
	}
	// With the schedule, one P more than the matmul threads, for the
	// stream's reader: a read that completes goes on at once instead of
	// waiting for a matmul goroutine to be preempted (docs/STREAMING.md:
	// 612 ms a token instead of 690 at the benchmark's 75% limit).
	if o.mode == "schedule" && runtime.GOMAXPROCS(0) < o.threads+1 {
		runtime.GOMAXPROCS(o.threads + 1)
	}
	var err error
	if o.ids, err = parseIDs(ids); err != nil {
		log(err)
	}
	if budget == "auto" {
		o.budget = -1
	} else if o.budget, err = parseSize(budget); err != nil {
		log(err)
	}
	switch *reader {
	case "auto":
	case "mapped":
		o.reader = stream.ReadMapped
	case "direct":
		o.reader = stream.ReadDirect
	default:
		log(fmt.Errorf("-reader %q: want auto, mapped or direct", *reader))
	}
	if retain == "auto" {
		o.retain = -1 // stream.RetainAuto
	} else if o.retain, err = parseSize(retain); err != nil {
		log(err)
	}
	res, err := generate(context.Background(), o, false)
	if err != nil {
		log(err)
	}
	out := make([]string, len(res.tokens))
	for i, t := range res.tokens {
		out[i] = strconv.Itoa(t)
	}
	fmt.Println(strings.Join(out, " "))

	per := func(n int64) int64 { return n / int64(max(res.passes, 1)) }
	line := fmt.Sprintf("llama: mode=%s threads=%d tokens=%d ms/token=%.1f", o.mode, o.threads, res.passes,
		float64(res.elapsed.Microseconds())/1000/float64(max(res.passes, 1)))
	if o.mode == "schedule" {
		st := res.stats
		line += fmt.Sprintf(" budget=%s reader=%s read/token=%s stall=%.3fs peak=%s retained=%s", mib(res.budget), st.reader, mib(per(st.read)), st.stall.Seconds(), mib(st.peak), mib(st.retained))
	}
	ms := make([]string, len(res.passMS))
	for i, v := range res.passMS {
		ms[i] = strconv.FormatFloat(v, 'f', 1, 64)
	}
	line += " pass_ms=" + strings.Join(ms, ",")
	if res.ioRead >= 0 {
		line += " io_read/token=" + mib(per(res.ioRead))
	}
	if hwm := peakRSS(); hwm >= 0 {
		line += " vmhwm=" + mib(hwm)
	}
	fmt.Fprintln(os.Stderr, line)
}

// reserve returns the memory a run of ctx positions allocates besides the
// weights: the KV cache and the activations, and 48 MiB for the runtime
// and the rest; -budget auto leaves it out of the budget.
func reserve(c config, ctx int) int64 {
	kv := int64(c.layers) * int64(ctx) * int64(c.headsKV*c.headDim) * 4 * 2
	act := int64(6*c.embd+2*c.heads*c.headDim+2*c.ff+c.vocab+ctx) * 4 * 2
	return kv + act + 48<<20
}
