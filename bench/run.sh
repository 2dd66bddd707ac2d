#!/usr/bin/env bash
# Reproduces the numbers in BENCHMARKS.md. Run from the repository root:
#
#   bash bench/run.sh            # default set: ~3.5 GB of generated files
#   BIG=1 bash bench/run.sh      # also the 4 GiB files with real bytes (+4 GiB)
#   BIG=1 NICE=-10 setsid bash bench/run.sh   # what BENCHMARKS.md used
#
# Environment: COUNT (default 5), BENCHTIME (default 1s), OUT (default
# bench/out), DIR (where the model files go; default $OUT/files, kept for
# reruns; delete it afterwards), NICE (e.g. -10: run the measurements at that
# priority), ROUNDS (default 3: interleaved rounds of the C++ side by side),
# SLOW=1 (also the minutes-long windowed runs on pte-100k), PAIRROUNDS
# (default 20: rounds of fresh processes in each pairbench run).
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-5}
BENCHTIME=${BENCHTIME:-1s}
OUT=${OUT:-bench/out}
DIR=${DIR:-$OUT/files}
mkdir -p "$OUT" "$DIR"
OUT=$(cd "$OUT" && pwd)
DIR=$(cd "$DIR" && pwd)
export EDGELOAD_BENCH_DIR=$DIR
if [ "${BIG:-0}" = 1 ]; then export EDGELOAD_BENCH_BIG=1; fi
benchstat="go run golang.org/x/perf/cmd/benchstat@latest"

{
  echo "# $(date -u +%FT%TZ)"
  echo "# nproc $(nproc); kernel $(uname -r); $(grep -m1 'model name' /proc/cpuinfo)"
  echo "# $(go version); page size $(getconf PAGESIZE)"
  echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT/machine.txt"

# EDGELOAD_BENCH_SLOW=1 adds the windowed Open/Lookup of pte-100k (minutes per op).
if [ "${SLOW:-0}" = 1 ]; then export EDGELOAD_BENCH_SLOW=1; fi

# Generate the files first (so that the first benchmark does not pay for it).
go run ./bench/cmd/loadbench -gen "$DIR" pte-64M flat-64M pte-1G ptd-1G pte-ext rten-1G pte-10k pte-100k
go run ./bench/cmd/loadbench -gen "$DIR" -sparse pte-4G pte-64M-a4096 pte-1G-a4096 pte-4G-a4096
if [ "${BIG:-0}" = 1 ]; then go run ./bench/cmd/loadbench -gen "$DIR" pte-4G; fi

# The load average every 30 s while the benchmarks run (the machine may be
# shared). NICE=-10 runs them at a higher priority (root only).
( while sleep 30; do echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; done ) >"$OUT/load.txt" &
loadpid=$!
trap 'kill $loadpid 2>/dev/null' EXIT
nice=()
if [ -n "${NICE:-}" ]; then
  nice=(nice -n "$NICE")
  # With autogroup scheduling (kernel.sched_autogroup_enabled=1) nice only
  # orders the processes of one session against each other; the session's
  # weight against other sessions is its autogroup's nice value. Start this
  # script with setsid so that the session is its own.
  if [ -w /proc/self/autogroup ]; then echo "$NICE" >/proc/self/autogroup || true; fi
  cat /proc/self/autogroup 2>/dev/null | tee -a "$OUT/machine.txt" || true
fi

# The benchmarks, in one run (-run '^$': no tests; only ./bench, not
# ./bench/memlimit, whose test is a separate experiment).
go test -c -o "$OUT/bench.test" ./bench/
(cd bench && "${nice[@]}" "$OUT/bench.test" -test.run '^$' -test.bench . -test.benchtime "$BENCHTIME" \
  -test.count "$COUNT" -test.timeout 0) | tee "$OUT/bench.txt"
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt"

# benchstat tables: modes side by side, edgeload whole-file as the base.
for b in Open OpenReal Touch Release TouchCold Lookup FirstLookup; do
  $benchstat -confidence 0.9 -filter ".name:$b" -col "/mode@(whole readfile xmmap windowed whole-pkg whole-random whole-file floor)" \
    "$OUT/bench.txt" >"$OUT/benchstat-$b.txt" 2>&1 || true
done
# Markdown tables (medians) for BENCHMARKS.md.
bt() { go run ./bench/cmd/benchtable "$@" "$OUT/bench.txt"; echo; }
{
  for u in ns/op rss-B model-rss-B maps B/op allocs/op; do bt -bench Open -unit $u -ratio whole; done
  for u in ns/op rss-B B/op allocs/op; do bt -bench OpenReal -unit $u -ratio whole; done
  for u in ns/op rss-B model-rss-B minflt; do bt -bench Touch -unit $u -ratio whole; done
  for u in ns/op release-ns rss-touched-B rss-released-B rss-ratio model-rss-B; do bt -bench Release -unit $u; done
  for u in ns/op disk-read-B; do bt -bench TouchCold -unit $u -ratio whole; done
  for u in ns/op allocs/op B/op; do bt -bench Lookup -unit $u; done
  for u in ns/op B/op allocs/op; do bt -bench FirstLookup -unit $u -ratio whole; done
} >"$OUT/tables.md"

# The process-level tool: N loads in one process, one JSON line each.
LB="$OUT/loadbench"
go build -o "$LB" ./bench/cmd/loadbench
if [ -n "${NICE:-}" ]; then LB="nice -n $NICE $LB"; fi
P4G="$DIR/pte-4G-sparse.pte"
if [ "${BIG:-0}" = 1 ]; then P4G="$DIR/pte-4G.pte"; fi
{
  for f in pte-64M pte-1G; do
    for m in whole windowed; do
      $LB -n 200 -mode $m "$DIR/$f.pte"
      $LB -n 50 -mode $m -touch first "$DIR/$f.pte"
    done
    $LB -n 5 -mode readfile "$DIR/$f.pte"
  done
  $LB -n 200 -mode whole "$P4G"
  $LB -n 200 -mode whole "$DIR/flat-64M.pte"
  $LB -n 200 -mode whole -data "$DIR/ptd-1G.ptd" "$DIR/pte-ext.pte"
  $LB -n 200 -mode windowed -data "$DIR/ptd-1G.ptd" "$DIR/pte-ext.pte"
  $LB -n 200 -mode whole "$DIR/ptd-1G.ptd"
  $LB -n 200 -mode whole "$DIR/rten-1G.rten"
  if [ "${BIG:-0}" = 1 ]; then
    $LB -n 20 -mode whole -touch first "$P4G"
    $LB -n 3 -mode readfile "$P4G"
  fi
  # Release after touching everything, in a small fresh process.
  $LB -n 3 -mode whole -touch all -release "$DIR/pte-1G.pte"
  $LB -n 3 -mode windowed -touch all -release "$DIR/pte-1G.pte"
  $LB -n 3 -mode whole -touch all -release -data "$DIR/ptd-1G.ptd" "$DIR/pte-ext.pte"
  # Two processes holding the same model, every page touched: PSS halves.
  $LB -procs 2 -mode whole "$DIR/pte-1G.pte"
  $LB -procs 2 -mode whole -data "$DIR/ptd-1G.ptd" "$DIR/pte-ext.pte"
  $LB -procs 2 -mode readfile "$DIR/pte-1G.pte"
} | tee "$OUT/loadbench.jsonl"

# The same steps in C on this machine, to calibrate against the reference
# measurements: the bare floor (open, fstat, mmap, one byte, munmap, close)
# and, with the 4 GiB file's real bytes, one byte of every tensor.
if command -v gcc >/dev/null; then
  gcc -O2 -o "$OUT/cfloor" bench/cfloor/floor.c
  {
    for f in "$DIR/pte-64M.pte" "$DIR/pte-1G.pte" "$P4G"; do "${nice[@]}" "$OUT/cfloor" "$f" 3000; done
    if [ "${BIG:-0}" = 1 ]; then
      # The first tensor's offset and the distance between tensors.
      read -r base stride count < <(go run ./cmd/edgeload inspect --json "$P4G" | python3 -c '
import json, sys
t = json.load(sys.stdin)["tensors"]
print(t[0]["offset"], t[1]["offset"] - t[0]["offset"], len(t))')
      "${nice[@]}" "$OUT/cfloor" "$P4G" 20 "$base" "$stride" "$count"
    fi
  } | tee "$OUT/cfloor.jsonl"
fi

# A C++ mapping loader doing the reference's work (headers, then a pointer
# to every constant tensor) with the code flatc generates from the
# project's schema, without and with flatbuffers::Verifier, run side by
# side with edgeload on the same files. Needs flatc and the FlatBuffers C++
# headers (Debian: flatbuffers-compiler, libflatbuffers-dev), both 2.0.8.
if command -v flatc >/dev/null && command -v g++ >/dev/null && [ -e /usr/include/flatbuffers/flatbuffers.h ]; then
  gen=$(mktemp -d)
  flatc --cpp -o "$gen" internal/schema/program.fbs
  g++ -O2 -std=c++17 -I"$gen" -o "$OUT/cxxload" bench/cxxload/load.cc
  rm -rf "$gen"
  kws=../shared/models/pte/arduino-keyword-spotting.pte
  # ROUNDS interleaved rounds (default 3): the machine's speed changes
  # from minute to minute, so each loader gets several turns at it.
  {
    for r in $(seq "${ROUNDS:-3}"); do
      for f in "$DIR/pte-64M.pte" "$DIR/pte-1G.pte" "$P4G" "$DIR/flat-64M.pte" $( [ -e "$kws" ] && echo "$kws" ); do
        for m in minimal verify pread; do "${nice[@]}" "$OUT/cxxload" $m "$f" 3000; done
        # edgeload in the same minute, for the side by side.
        $LB -n 3000 -mode whole "$f"
      done
    done
  } | tee "$OUT/cxxload.jsonl"
  # The same side by side in blocks of 50 loads, the two loaders taking
  # turns (bench/cmd/pairbench), in fresh processes each round: both meet
  # the same machine speeds and many process layouts, so that their
  # medians compare the loaders.
  go build -o "$OUT/pairbench" ./bench/cmd/pairbench
  {
    for f in "$P4G" "$DIR/pte-1G.pte" "$DIR/flat-64M.pte" $( [ -e "$kws" ] && echo "$kws" ); do
      for m in minimal verify pread; do
        "${nice[@]}" "$OUT/pairbench" -rounds "${PAIRROUNDS:-20}" -pairs 20 -n 50 -a "$OUT/cxxload $m $f serve" -b "$OUT/loadbench -serve $f"
      done
    done
  } | tee "$OUT/pairbench.jsonl"
fi
