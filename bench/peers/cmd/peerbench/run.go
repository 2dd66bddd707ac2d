package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A peerSpec is one loader in a case: how to start its serve and stat
// modes, and the peer its times are divided by.
type peerSpec struct {
	Name  string   `json:"name"`
	Base  string   `json:"base"`
	Serve []string `json:"serve"`
	Stat  []string `json:"stat"`
}

// peerResult is one peer's summary in a case.
type peerResult struct {
	Name         string          `json:"name"`
	Base         string          `json:"base"`
	Loads        int             `json:"loads"`
	MedianUS     float64         `json:"median_us"`
	MinUS        float64         `json:"min_us"`
	P10US        float64         `json:"p10_us"`
	P90US        float64         `json:"p90_us"`
	Ratio        float64         `json:"ratio_median"`       // median / base's median
	CycleP10     float64         `json:"cycle_ratio_p10"`    // percentiles over the cycles of the
	CycleP50     float64         `json:"cycle_ratio_median"` // ratio of this peer's block median
	CycleP90     float64         `json:"cycle_ratio_p90"`    // to its base's block median
	RoundMin     float64         `json:"round_ratio_min"`
	RoundMax     float64         `json:"round_ratio_max"`
	Stat         json.RawMessage `json:"stat,omitempty"`
	blockMedians []float64
	times        []float64
}

func runCmd(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	dir := fs.String("dir", "/tmp/peerbench-files", "directory of the generated files (written if absent)")
	rounds := fs.Int("rounds", 5, "rounds, each with fresh processes of every peer")
	cycles := fs.Int("cycles", 20, "measured cycles of blocks per round")
	warmup := fs.Int("warmup", 3, "cycles run first in a round and discarded")
	blockMS := fs.Float64("block-ms", 20, "target length of one block of loads, in ms")
	rust := fs.String("rust", "", "the Rust safetensors harness (st-harness); none: left out")
	llama := fs.String("llama", "", "the llama.cpp GGUF harness (gguf_harness); none: left out")
	only := fs.String("case", "", "comma-separated cases to run (gguf-300, st-300, st-10000); empty: all")
	out := fs.String("out", "", "directory for the raw output")
	fs.Parse(args)
	if fs.NArg() != 0 || *rounds < 1 || *cycles < 1 || *warmup < 1 {
		usage()
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	files, err := generate(*dir)
	if err != nil {
		return err
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
	}
	for _, f := range files {
		if *only != "" && !slices.Contains(strings.Split(*only, ","), f.Case) {
			continue
		}
		specs := caseSpecs(f, self, *rust, *llama)
		res, raw, err := runCase(specs, *rounds, *cycles, *warmup, *blockMS)
		if err != nil {
			return fmt.Errorf("%s: %w", f.Case, err)
		}
		st, err := os.Stat(f.Path)
		if err != nil {
			return err
		}
		title := fmt.Sprintf("%s: %s (%d bytes), lookup %q; %d rounds × %d cycles", f.Case, filepath.Base(f.Path), st.Size(), f.Tensor, *rounds, *cycles)
		table := markdown(title, res)
		fmt.Print(table)
		if *out != "" {
			var js bytes.Buffer
			enc := json.NewEncoder(&js)
			enc.Encode(map[string]any{"case": f.Case, "file": f.Path, "size": st.Size(), "tensor": f.Tensor,
				"rounds": *rounds, "cycles": *cycles, "warmup": *warmup, "block_ms": *blockMS, "peers": specs})
			for _, r := range res {
				enc.Encode(r)
			}
			if err := os.WriteFile(filepath.Join(*out, f.Case+".jsonl"), js.Bytes(), 0o644); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(*out, f.Case+".md"), []byte(table), 0o644); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(*out, f.Case+"-times.txt"), raw, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// caseSpecs lists the peers of file f's case.
func caseSpecs(f genFile, self, rust, llama string) []peerSpec {
	goPeer := func(name, base string) peerSpec {
		return peerSpec{Name: name, Base: base,
			Serve: []string{self, "serve", "-peer", name, f.Path, f.Tensor},
			Stat:  []string{self, "stat", "-peer", name, f.Path, f.Tensor}}
	}
	ext := func(name, base, bin string, extra ...string) peerSpec {
		return peerSpec{Name: name, Base: base,
			Serve: append([]string{bin, f.Path, f.Tensor, "serve"}, extra...),
			Stat:  append([]string{bin, f.Path, f.Tensor, "stat"}, extra...)}
	}
	var s []peerSpec
	if strings.HasPrefix(f.Case, "gguf") {
		s = append(s, goPeer("edgeload-gguf", ""), goPeer("edgeload-loader", "edgeload-gguf"),
			goPeer("gguf-parser-go", "edgeload-gguf"), goPeer("gguf-parser-go-mmap", "edgeload-gguf"))
		if llama != "" {
			s = append(s, ext("llama.cpp", "edgeload-gguf", llama))
		}
		s = append(s, goPeer("edgeload-gguf-parse", ""))
		if llama != "" {
			s = append(s, ext("llama.cpp-buffer", "edgeload-gguf-parse", llama, "parse"))
		}
		return s
	}
	s = append(s, goPeer("edgeload-st", ""), goPeer("edgeload-loader", "edgeload-st"), goPeer("nlpodyssey", "edgeload-st"))
	if rust != "" {
		s = append(s, ext("rust-safetensors", "edgeload-st", rust))
	}
	s = append(s, goPeer("edgeload-st-parse", ""), goPeer("nlpodyssey-parse", "edgeload-st-parse"))
	if rust != "" {
		s = append(s, ext("rust-safetensors-parse", "edgeload-st-parse", rust, "parse"))
	}
	return s
}

// server is one running peer in serve mode.
type server struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func start(argv []string) (*server, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &server{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<16)}, nil
}

// block asks s for n loads and returns their times in nanoseconds.
func (s *server) block(n int) ([]float64, error) {
	if _, err := fmt.Fprintf(s.in, "%d\n", n); err != nil {
		return nil, err
	}
	line, err := s.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("%s: no answer: %w", s.cmd.Path, err)
	}
	f := strings.Fields(line)
	if len(f) != n {
		return nil, fmt.Errorf("%s: %d times for %d loads", s.cmd.Path, len(f), n)
	}
	t := make([]float64, n)
	for i, v := range f {
		if t[i], err = strconv.ParseFloat(v, 64); err != nil || t[i] <= 0 {
			return nil, fmt.Errorf("%s: bad time %q", s.cmd.Path, v)
		}
	}
	return t, nil
}

func (s *server) stop() error {
	s.in.Close()
	return s.cmd.Wait()
}

// runCase runs the rounds of one case and each peer's stat mode, and
// returns the summaries and the raw times (one line per block: round,
// cycle, peer, times in ns).
func runCase(specs []peerSpec, rounds, cycles, warmup int, blockMS float64) ([]*peerResult, []byte, error) {
	res := make([]*peerResult, len(specs))
	idx := map[string]int{}
	for i, s := range specs {
		res[i] = &peerResult{Name: s.Name, Base: s.Base}
		idx[s.Name] = i
	}
	var raw bytes.Buffer
	for r := range rounds {
		srv := make([]*server, len(specs))
		for i, s := range specs {
			var err error
			if srv[i], err = start(s.Serve); err != nil {
				return nil, nil, err
			}
		}
		n := make([]int, len(specs))
		roundTimes := make([][]float64, len(specs))
		for c := range warmup + cycles {
			meds := make([]float64, len(specs))
			for k := range specs {
				i := (k + c) % len(specs)
				bn := max(n[i], 1)
				t, err := srv[i].block(bn)
				if err != nil {
					return nil, nil, fmt.Errorf("%s: %w", specs[i].Name, err)
				}
				if c < warmup {
					// size the blocks from the last warm-up block
					n[i] = int(min(max(blockMS*1e6/median(t), 1), 2000))
					continue
				}
				meds[i] = median(t)
				roundTimes[i] = append(roundTimes[i], t...)
				res[i].times = append(res[i].times, t...)
				fmt.Fprintf(&raw, "%d %d %s", r, c-warmup, specs[i].Name)
				for _, v := range t {
					fmt.Fprintf(&raw, " %.0f", v)
				}
				raw.WriteByte('\n')
			}
			if c < warmup {
				continue
			}
			for i, s := range specs {
				if s.Base != "" {
					res[i].blockMedians = append(res[i].blockMedians, meds[i]/meds[idx[s.Base]])
				}
			}
		}
		for i, s := range srv {
			if err := s.stop(); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", specs[i].Name, err)
			}
		}
		for i, s := range specs {
			if s.Base == "" {
				continue
			}
			q := median(roundTimes[i]) / median(roundTimes[idx[s.Base]])
			if r == 0 {
				res[i].RoundMin, res[i].RoundMax = q, q
			}
			res[i].RoundMin, res[i].RoundMax = min(res[i].RoundMin, q), max(res[i].RoundMax, q)
		}
	}
	for i, s := range specs {
		p := res[i]
		t := slices.Clone(p.times)
		slices.Sort(t)
		p.Loads = len(t)
		p.MedianUS, p.MinUS = median(t)/1e3, t[0]/1e3
		p.P10US, p.P90US = t[len(t)/10]/1e3, t[len(t)*9/10]/1e3
		if s.Base != "" {
			b := slices.Clone(p.blockMedians)
			slices.Sort(b)
			p.CycleP10, p.CycleP50, p.CycleP90 = b[len(b)/10], median(b), b[len(b)*9/10]
		}
		// the stat mode in a fresh process
		cmd := exec.Command(s.Stat[0], s.Stat[1:]...)
		cmd.Stderr = os.Stderr
		o, err := cmd.Output()
		if err != nil {
			return nil, nil, fmt.Errorf("%s stat: %w", s.Name, err)
		}
		p.Stat = json.RawMessage(bytes.TrimSpace(o))
	}
	for i, s := range specs {
		if s.Base != "" {
			res[i].Ratio = res[i].MedianUS / res[idx[s.Base]].MedianUS
		}
	}
	return res, raw.Bytes(), nil
}

func median(t []float64) float64 {
	s := slices.Clone(t)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// markdown renders one case's results as a table.
func markdown(title string, res []*peerResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n### %s\n\n", title)
	b.WriteString("| peer | loads | median µs | p10–p90 µs | ÷ base (medians) | ÷ base per cycle p10/p50/p90 | allocs/open | allocs/lookup | Rss growth after open | of which file pages |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, p := range res {
		var st struct {
			RssBefore       int64   `json:"rss_before_kib"`
			RssAfter        int64   `json:"rss_after_open_kib"`
			FileRss         *int64  `json:"file_rss_kib"`
			AllocsPerOpen   float64 `json:"allocs_per_open"`
			AllocsPerLookup float64 `json:"allocs_per_lookup"`
		}
		json.Unmarshal(p.Stat, &st)
		ratio, cyc := "—", "—"
		if p.Base != "" {
			ratio = fmt.Sprintf("%.2f× %s", p.Ratio, p.Base)
			cyc = fmt.Sprintf("%.2f / %.2f / %.2f", p.CycleP10, p.CycleP50, p.CycleP90)
		}
		file := "—"
		if st.FileRss != nil {
			file = fmt.Sprintf("%d KiB", *st.FileRss)
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.1f–%.1f | %s | %s | %s | %g | %d KiB | %s |\n",
			p.Name, p.Loads, p.MedianUS, p.P10US, p.P90US, ratio, cyc, strconv.FormatFloat(st.AllocsPerOpen, 'f', -1, 64), st.AllocsPerLookup,
			st.RssAfter-st.RssBefore, file)
	}
	fmt.Fprintf(&b, "\n_%s_\n", time.Now().UTC().Format(time.RFC3339))
	return b.String()
}
