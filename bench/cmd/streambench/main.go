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
//	            [-rounds 3] [-read-bps SIZE] [-svg FILE.svg] [-svg-budget 64MiB] [-sample 10ms] [-md FILE]
//	            [-csv PREFIX] FILE
//
// Each run is a child process (this binary with -child) moved into a fresh
// memory cgroup with a hard limit before it starts reading. The consumer
// reads every byte into a CRC-32C ("crc") or one byte per page ("touch",
// which leaves mostly the reader's own CPU time). The parent samples the
// file's pages in the page cache with mincore every -sample during the run
// (walking only the 64 MiB chunks in which cachestat finds cached pages, so
// that one sample takes a millisecond rather than the 20 ms of a walk over
// 4 GiB, during which the stream moves on) and reports the peak; the child reports its wall time, bytes, CPU time
// (getrusage) and, for the stream, the CPU time of the stream's own
// goroutine (stream.Stats.CPU). Every run is measured -rounds times, the
// runs of a round one after another, and the table gives each run's median
// throughput with its range, and the highest peaks of all rounds. The table
// goes to stdout (and -md); -svg draws resident bytes against time for the
// fault loop and the stream at -svg-budget (their median rounds), with the
// budget as a line. -csv writes each median round's samples (seconds,
// resident bytes) to PREFIX-RUN-CONSUMER.csv, one file a run.
//
// -read-bps throttles each child's reads from the file's disk to SIZE a
// second (a v1 blkio group, or io.max on cgroup v2), as a device's slower
// flash would. Sizes take IEC suffixes (64MiB, 1GiB; see
// internal/sizeflag).
package main
