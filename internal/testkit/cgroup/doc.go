// Package cgroup creates memory cgroups with a hard limit for tests and
// benchmarks that run a child process under a memory limit (cgroup v1 or
// v2), and reads their peak usage and OOM kills.
//
// It works on Linux only; elsewhere the package is empty.
package cgroup
