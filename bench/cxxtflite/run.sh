#!/usr/bin/env bash
# Compares edgeload's TFLite Open + a view of every constant with
# bench/cxxtflite (LiteRT's load work: mmap + flatbuffers::Verifier), in
# both of its modes, interleaved by bench/cmd/pairbench, on every real
# .tflite of ../shared/models/tflite and the generated tflite-256M (inline
# buffers) and tflite-ext-1G (the large-model layout, sparse).
#
# Usage, from the repository root:
#
#   bash bench/cxxtflite/run.sh OUTDIR
#
# Environment: ROUNDS (5), PAIRS (10), WARMUP (3), N (loads a block for the
# real files, 100), NBIG (for the generated ones, 20), GEN (where the
# generated files go, /tmp/tflitebench-files), BIN (/tmp/tflitebench-bin).
# OUTDIR gets pairbench.jsonl (one pairbench line per file and mode),
# single.jsonl (each loader alone: cxxtflite FILE 2000, loadbench -n 2000
# with its phases), machine.txt, load.txt (the load average every 10 s)
# and command.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: run.sh OUTDIR}
ROUNDS=${ROUNDS:-5} PAIRS=${PAIRS:-10} WARMUP=${WARMUP:-3} N=${N:-100} NBIG=${NBIG:-20}
GEN=${GEN:-/tmp/tflitebench-files} BIN=${BIN:-/tmp/tflitebench-bin}
mkdir -p "$out" "$BIN" "$GEN"
out=$(cd "$out" && pwd)

flatc --cpp -o "$BIN" internal/schema/tflite.fbs internal/schema/tflite_options.fbs
g++ -O2 -std=c++17 -Wall -Werror -I"$BIN" -o "$BIN/cxxtflite" bench/cxxtflite/load.cc
go build -o "$BIN/loadbench" ./bench/cmd/loadbench
go build -o "$BIN/pairbench" ./bench/cmd/pairbench
"$BIN/loadbench" -gen "$GEN" -sparse tflite-256M tflite-ext-1G

{
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- loader bench || echo ' (modified)')"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) x $(nproc)"
  echo "kernel: $(uname -r)"
  echo "go: $(go version)"
  echo "g++: $(g++ --version | head -n 1)"
  echo "flatc: $(flatc --version)"
} >"$out/machine.txt"
echo "ROUNDS=$ROUNDS PAIRS=$PAIRS WARMUP=$WARMUP N=$N NBIG=$NBIG bash bench/cxxtflite/run.sh $1" >"$out/command.txt"

(while :; do echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 10; done) >"$out/load.txt" &
loadpid=$!
trap 'kill $loadpid 2>/dev/null || true' EXIT

: >"$out/pairbench.jsonl"
: >"$out/single.jsonl"
files=(../shared/models/tflite/*.tflite "$GEN/tflite-256M.tflite" "$GEN/tflite-ext-1G-sparse.tflite")
for f in "${files[@]}"; do
  n=$N
  case "$f" in "$GEN"/*) n=$NBIG ;; esac
  for mode in verify pread; do
    cmd=("$BIN/pairbench" -rounds "$ROUNDS" -pairs "$PAIRS" -warmup "$WARMUP" -n "$n"
      -a "$BIN/cxxtflite $mode $f serve" -b "$BIN/loadbench -serve $f")
    echo "${cmd[*]}" >>"$out/command.txt"
    "${cmd[@]}" | tee -a "$out/pairbench.jsonl"
  done
  iters=2000
  case "$f" in "$GEN"/*) iters=200 ;; esac
  for mode in verify pread; do "$BIN/cxxtflite" $mode "$f" $iters >>"$out/single.jsonl"; done
  "$BIN/loadbench" -n $iters "$f" >>"$out/single.jsonl"
done

# The table: edgeload's median and minimum over the C++ loader's, per mode.
python3 - "$out/pairbench.jsonl" >"$out/table.md" <<'PY'
import json, os, sys
rows = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    _, mode, f, _ = r["a"].split(" ")
    rows.setdefault(os.path.basename(f).removesuffix(".tflite"), {})[mode] = r
print("| file | C++ verify median | edgeload median | ratio vs verify | ratio vs pread | ratio of minima vs verify / pread | pair ratio p10-p90 vs verify |")
print("|---|---:|---:|---:|---:|---:|---:|")
for name, m in rows.items():
    v, p = m["verify"], m["pread"]
    print(f"| {name} | {v['a_median_us']:.1f} µs | {v['b_median_us']:.1f} µs | {v['ratio_median']:.2f} | {p['ratio_median']:.2f} "
          f"| {v['ratio_min']:.2f} / {p['ratio_min']:.2f} | {v['pair_ratio_p10']:.2f}-{v['pair_ratio_p90']:.2f} |")
PY
cat "$out/table.md"
