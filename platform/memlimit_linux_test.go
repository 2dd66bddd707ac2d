package platform

import (
	"os"
	"path/filepath"
	"testing"
)

// writeTree writes files (path → content) under a new root.
func writeTree(t *testing.T, files map[string]string) string {
	root := t.TempDir()
	for p, c := range files {
		f := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestMemoryLimitFiles(t *testing.T) {
	const meminfo = "MemTotal:       16384 kB\nMemFree:        100 kB\n"
	for _, c := range []struct {
		name  string
		files map[string]string
		want  int64
		ok    bool
	}{
		{"v1", map[string]string{
			"proc/meminfo":     meminfo,
			"proc/self/cgroup": "4:memory:/a/b\n0::/\n",
			"sys/fs/cgroup/memory/a/b/memory.limit_in_bytes": "4096000\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":     "9223372036854771712\n",
		}, 4096000, true},
		{"v1 parent smaller", map[string]string{
			"proc/meminfo":     meminfo,
			"proc/self/cgroup": "4:cpu,memory:/a/b\n",
			"sys/fs/cgroup/memory/a/b/memory.limit_in_bytes": "9223372036854771712\n",
			"sys/fs/cgroup/memory/a/memory.limit_in_bytes":   "2048000\n",
		}, 2048000, true},
		{"v2", map[string]string{
			"proc/meminfo":     meminfo,
			"proc/self/cgroup": "0::/user.slice/app\n",
			"sys/fs/cgroup/user.slice/app/memory.max": "3000000\n",
			"sys/fs/cgroup/user.slice/memory.max":     "max\n",
		}, 3000000, true},
		{"no limit: the machine's memory", map[string]string{
			"proc/meminfo":               meminfo,
			"proc/self/cgroup":           "0::/x\n",
			"sys/fs/cgroup/x/memory.max": "max\n",
		}, 16384 << 10, true},
		{"a limit above the machine's memory", map[string]string{
			"proc/meminfo":               meminfo,
			"proc/self/cgroup":           "0::/x\n",
			"sys/fs/cgroup/x/memory.max": "999999999999\n",
		}, 16384 << 10, true},
		{"nothing to read", map[string]string{}, 0, false},
	} {
		got, ok := memoryLimit(writeTree(t, c.files))
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
	if n, ok := MemoryLimit(); !ok || n <= 0 {
		t.Errorf("MemoryLimit() = %d, %v on this machine", n, ok)
	}
}
