// Command streambench measures, side by side in one run, three ways of
// reading every weight of a model once under a memory cgroup, with the page
// cache cold before each run:
//
//   - pread: the file read sequentially with pread into a 1 MiB buffer
//     (what the disk gives);
//   - fault: the plain loop over the tensors in use order, each read through
//     its mapped view and then released (segment Release, DropPageCache);
//   - stream: package stream at each budget, with WithDropCache.
//
// Usage:
//
//	streambench [-budgets 32MiB,64MiB,128MiB] [-limit 256MiB] [-consumer crc|touch|both]
//	            [-svg FILE.svg] [-svg-budget 64MiB] [-sample 5ms] [-md FILE] FILE
//
// Each run is a child process (this binary with -child) moved into a fresh
// memory cgroup with a hard limit before it starts reading. The consumer
// reads every byte into a CRC-32C ("crc") or one byte per page ("touch",
// which leaves mostly the reader's own CPU time). The parent samples the
// file's pages in the page cache with mincore every -sample during the run
// and reports the peak; the child reports its wall time, bytes and CPU time
// (getrusage). The table goes to stdout (and -md); -svg draws resident bytes
// against time for the fault loop and the stream at -svg-budget, with the
// budget as a line.
package main
