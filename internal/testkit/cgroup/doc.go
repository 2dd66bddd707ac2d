// Package cgroup creates memory cgroups with a hard limit for tests and
// benchmarks that run a child process under a memory limit (cgroup v1 or
// v2), and reads their peak usage and OOM kills. ThrottleReads limits a
// process's reads from a disk (a v1 blkio group, or io.max on v2), and
// DiskOf names the disk that holds a file, for it.
//
// The cgroups work on Linux only; elsewhere the package has only Emulated,
// which reports false.
package cgroup
