package platform

import (
	"runtime"
	"testing"
	"time"
)

// A locked goroutine's thread CPU time grows while it spins, and not while
// it waits for another thread to spin.
func TestThreadCPUTime(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := func() time.Duration {
		u, s, _ := ThreadCPUTime()
		return u + s
	}
	_, _, ok := ThreadCPUTime()
	t0 := cpu()
	if !ok {
		t.Fatal("no thread CPU time on Linux")
	}
	done := make(chan struct{})
	go func() { // on another thread
		for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
		}
		close(done)
	}()
	<-done
	t1 := cpu()
	if d := t1 - t0; d > 40*time.Millisecond {
		t.Errorf("waiting for another thread's 100 ms of spinning counted %v", d)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		t2 := cpu()
		if t2-t1 >= 20*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s of spinning counted %v", t2-t1)
		}
	}
}
