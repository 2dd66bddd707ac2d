package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/edgeload/edgeload/bench"
)

// stat is what a peer's stat mode prints.
type stat struct {
	Peer            string  `json:"peer"`
	RssBeforeKiB    int64   `json:"rss_before_kib"`
	RssAfterOpenKiB int64   `json:"rss_after_open_kib"`
	AnonDeltaKiB    *int64  `json:"anon_delta_kib,omitempty"`
	FileRssKiB      *int64  `json:"file_rss_kib,omitempty"`
	AllocsPerOpen   float64 `json:"allocs_per_open"`
	BytesPerOpen    float64 `json:"bytes_per_open,omitempty"`
	AllocsPerLookup float64 `json:"allocs_per_lookup"`
}

func peerCmd(mode string, args []string) error {
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	name := fs.String("peer", "", "peer name")
	fs.Parse(args)
	if fs.NArg() != 2 {
		usage()
	}
	path, tensor := fs.Arg(0), fs.Arg(1)
	p, ok := goPeers[*name]
	if !ok {
		return fmt.Errorf("unknown peer %q", *name)
	}
	if p.prepare != nil {
		if err := p.prepare(path); err != nil {
			return err
		}
	}
	if mode == "stat" {
		return statPeer(*name, p, path, tensor)
	}
	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		n, err := strconv.Atoi(strings.TrimSpace(in.Text()))
		if err != nil || n <= 0 {
			return fmt.Errorf("serve: want a positive count, got %q", in.Text())
		}
		for i := range n {
			t0 := time.Now()
			cl, err := p.open(path, tensor)
			if err != nil {
				return err
			}
			cl()
			d := time.Since(t0)
			if i > 0 {
				out.WriteByte(' ')
			}
			out.WriteString(strconv.FormatInt(d.Nanoseconds(), 10))
		}
		out.WriteByte('\n')
		if err := out.Flush(); err != nil {
			return err
		}
	}
	return in.Err()
}

func statPeer(name string, p goPeer, path, tensor string) error {
	r0, err := bench.ReadRollup(0)
	if err != nil {
		return err
	}
	cl, err := p.open(path, tensor)
	if err != nil {
		return err
	}
	r1, err := bench.ReadRollup(0)
	if err != nil {
		return err
	}
	ms, err := bench.ReadSmaps(0, path)
	if err != nil {
		return err
	}
	fileRss := bench.SumMaps(ms).Rss >> 10
	anon := (r1.Anonymous - r0.Anonymous) >> 10
	cl()
	s := stat{Peer: name, RssBeforeKiB: r0.Rss >> 10, RssAfterOpenKiB: r1.Rss >> 10, AnonDeltaKiB: &anon, FileRssKiB: &fileRss}

	const ops = 20
	var m0, m1 runtime.MemStats
	for range 2 {
		if cl, err = p.open(path, tensor); err != nil {
			return err
		}
		cl()
	}
	runtime.ReadMemStats(&m0)
	for range ops {
		if cl, err = p.open(path, tensor); err != nil {
			return err
		}
		cl()
	}
	runtime.ReadMemStats(&m1)
	s.AllocsPerOpen = float64(m1.Mallocs-m0.Mallocs) / ops
	s.BytesPerOpen = float64(m1.TotalAlloc-m0.TotalAlloc) / ops

	look, done, err := lookupFunc(name, path, tensor)
	if err != nil {
		return err
	}
	defer done()
	const lookups = 1000
	if !look() {
		return errors.New("lookup failed")
	}
	runtime.ReadMemStats(&m0)
	for range lookups {
		look()
	}
	runtime.ReadMemStats(&m1)
	s.AllocsPerLookup = float64(m1.Mallocs-m0.Mallocs) / lookups
	return json.NewEncoder(os.Stdout).Encode(s)
}
