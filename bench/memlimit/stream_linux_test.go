package memlimit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/edgeload/edgeload/formats" // every built-in format
	"github.com/edgeload/edgeload/internal/testkit/cgroup"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/stream"
)

// The streamer's cgroup test: a model of streamTensors 4 MiB tensors
// (256 MiB) streams under a streamBudget budget inside a streamLimit cgroup.
const (
	streamTensors = 64
	streamLimit   = 64 << 20
	streamBudget  = 16 << 20
	envStreamFile = "EDGELOAD_STREAM_CHILD_FILE" // set for the child
	// streamSlack is how far past the budget the group's peak may go: the
	// child's own memory charged after it joins the group (heap growth,
	// stacks, page tables: 1-2 MiB here), the pages v1 may charge past a
	// limit (peakSlack), and released pages the kernel has not yet taken
	// back when the machine is busy (26.8 MiB of peak was seen at a load
	// average of 20 on two cores). Without WithDropCache the group's peak
	// is the limit, 48 MiB above the budget, which this still refuses.
	streamSlack = 24 << 20
	// streamMinPeak is the least the group's peak may be: a 2 MiB grain of
	// the file, charged to the group as the child reads it.
	streamMinPeak = 2 << 20
)

// streamReport is what the child prints.
type streamReport struct {
	Tensors    int
	Mismatches int
	FirstBad   string
	Peak       int64 // the stream's own accounting
	Err        string
}

// TestStreamMemLimit streams a model four times the memory limit inside a
// memory cgroup and checks every tensor's sum against the fill pattern,
// and that the group's own peak (the file's pages the child brought in and
// its memory) stays within the stream's budget plus streamSlack: the
// kernel's count, not the stream's. The child is this test binary, running
// TestStreamChild.
func TestStreamMemLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("TestStreamMemLimit skipped in -short mode: it writes a 256 MiB file")
	}
	if emu, ok := cgroup.Emulated(); ok {
		t.Skipf("TestStreamMemLimit skipped under the emulator %s: a cgroup memory test is not meaningful under emulation", emu)
	}
	if runtime.GOARCH == "386" || runtime.GOARCH == "arm" {
		t.Skip("TestStreamMemLimit skipped on 32-bit: the stream's windowed mode is covered by package stream's tests")
	}
	parent, err := cgroup.FindMemory()
	if err != nil {
		skip(t, "%v", err)
	}
	cg, err := parent.Create(fmt.Sprintf("%s%d-stream", groupPrefix, os.Getpid()), streamLimit)
	if err != nil {
		if errors.Is(err, cgroup.ErrNoCgroup) {
			skip(t, "cannot create a memory cgroup under %s: %v", parent.Dir, err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cg.Remove(); err != nil {
			t.Error(err)
		}
	})

	path := filepath.Join(t.TempDir(), "stream.pte")
	ts := make([]writer.PTETensor, streamTensors)
	for i := range ts {
		ts[i] = writer.PTETensor{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{1024, TensorElems / 1024},
			Name: TensorName(i), Fill: func(p []byte, off int64) { Fill(i, p, off) }}
	}
	if _, err := (&writer.PTE{Methods: []writer.PTEMethod{{Name: "forward", Tensors: ts}}}).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if err := syncFile(path); err != nil {
		t.Fatal(err)
	}
	setCache(t, path, false)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestStreamChild$", "-test.v")
	cmd.Env = append(os.Environ(), envStreamFile+"="+path)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := cg.AddProc(cmd.Process.Pid); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal(err)
	}
	io.WriteString(stdin, "go\n")
	stdin.Close()
	werr := cmd.Wait()
	ooms := cg.OOMKills()
	peak, err := cg.Peak()
	if err != nil {
		t.Fatalf("the group's peak usage: %v", err)
	}
	var rep streamReport
	for _, line := range strings.Split(stdout.String(), "\n") {
		if j, ok := strings.CutPrefix(line, "STREAM "); ok {
			if err := json.Unmarshal([]byte(j), &rep); err != nil {
				t.Fatal(err)
			}
		}
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	t.Logf("child: %+v; cgroup peak %d MiB of %d MiB, OOM kills %d", rep, peak>>20, streamLimit>>20, ooms)
	switch {
	case ws.Signaled():
		t.Fatalf("the child was killed (%v; OOM kills %d)", ws.Signal(), ooms)
	case werr != nil || rep.Err != "":
		t.Fatalf("the child failed: %v %s\n%s", werr, rep.Err, stderr.String())
	case rep.Tensors != streamTensors || rep.Mismatches != 0:
		t.Fatalf("%d tensors streamed, %d sums wrong (first: %s)", rep.Tensors, rep.Mismatches, rep.FirstBad)
	case rep.Peak > streamBudget:
		t.Fatalf("the stream held %d bytes, above its budget %d", rep.Peak, streamBudget)
	case ooms > 0:
		t.Fatalf("%d OOM kills in the group", ooms)
	case peak > streamBudget+streamSlack:
		t.Fatalf("the group's peak usage is %d bytes (%.1f MiB), above the stream's budget %d MiB plus %d MiB of slack; the stream counted %d",
			peak, float64(peak)/(1<<20), streamBudget>>20, streamSlack>>20, rep.Peak)
	case peak < streamMinPeak:
		t.Fatalf("the group's peak usage is %d bytes: the child's reads were not charged to it", peak)
	}
}

// TestStreamChild is the child of TestStreamMemLimit; without its
// environment variable it does nothing.
func TestStreamChild(t *testing.T) {
	path := os.Getenv(envStreamFile)
	if path == "" {
		t.Skip("the child of TestStreamMemLimit")
	}
	bufio.NewReader(os.Stdin).ReadString('\n')
	var rep streamReport
	err := streamSums(path, &rep)
	if err != nil {
		rep.Err = err.Error()
	}
	b, _ := json.Marshal(rep)
	fmt.Printf("STREAM %s\n", b)
	if err != nil {
		t.Fatal(err)
	}
}

// streamSums streams the model and checks each tensor's sum (its windows
// added up) against ExpectedSum.
func streamSums(path string, rep *streamReport) error {
	m, err := loader.Open(path)
	if err != nil {
		return err
	}
	defer m.Close()
	s, err := stream.New(context.Background(), m, stream.WithBudget(streamBudget), stream.WithDropCache())
	if err != nil {
		return err
	}
	defer s.Close()
	var sum float64
	for {
		it, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if it.Part == 0 {
			sum = 0
		}
		var ferr error
		err = it.Data.File().Guard(func() {
			var v []float32
			if v, _, ferr = it.Data.Float32(); ferr == nil {
				sum += Sum(v)
			}
		})
		if err != nil {
			return err
		}
		if ferr != nil {
			return fmt.Errorf("%s part %d: %w", it.Name, it.Part, ferr)
		}
		if it.Part < it.Parts-1 {
			continue
		}
		rep.Tensors++
		if want := ExpectedSum(it.Tensor); sum != want {
			rep.Mismatches++
			if rep.FirstBad == "" {
				rep.FirstBad = fmt.Sprintf("%s: sum %v, want %v", it.Name, sum, want)
			}
		}
	}
	rep.Peak = s.Stats().Peak
	return nil
}
