#!/usr/bin/env bash
# TFLite Open against LiteRT's load work in C++ (bench/cxxtflite, verify
# and pread modes), on every real .tflite of ../shared/models/tflite and on
# tflite-ext-1G (1,024 float32 [512,512] constants in the large-model
# layout, sparse), measured two ways:
#
#   plain loop  each loader alone: cxxtflite MODE FILE N, loadbench -n N FILE
#               (single.jsonl; loadbench adds its phases);
#   pairbench   the two interleaved in blocks of a few milliseconds
#               (pairbench.jsonl), which shares the machine's state between them.
#
# Usage, from the repository root:
#
#   bash bench/results/2026-11-27-tflite-open/run.sh [OUTDIR]
#
# Environment: GEN (where tflite-ext-1G goes, /work/big), BIN
# (/tmp/tflite-open-bin), ROUNDS (5), PAIRS (10), WARMUP (3), N (100 loads a
# block for the real files; 20 for tflite-ext-1G), ITERS (2000; 200).
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-bench/results/2026-11-27-tflite-open}
GEN=${GEN:-/work/big} BIN=${BIN:-/tmp/tflite-open-bin}
ROUNDS=${ROUNDS:-5} PAIRS=${PAIRS:-10} WARMUP=${WARMUP:-3} N=${N:-100} ITERS=${ITERS:-2000}
mkdir -p "$out" "$BIN" "$GEN"
out=$(cd "$out" && pwd)

flatc --cpp -o "$BIN" internal/schema/tflite.fbs internal/schema/tflite_options.fbs
g++ -O2 -std=c++17 -Wall -Werror -I"$BIN" -o "$BIN/cxxtflite" bench/cxxtflite/load.cc
go build -o "$BIN/loadbench" ./bench/cmd/loadbench
go build -o "$BIN/pairbench" ./bench/cmd/pairbench
[ -e "$GEN/tflite-ext-1G-sparse.tflite" ] || "$BIN/loadbench" -gen "$GEN" -sparse tflite-ext-1G

{
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- loader internal bench || echo ' (modified)')"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) x $(nproc)"
  echo "kernel: $(uname -r)"
  echo "go: $(go version)"
  echo "g++: $(g++ --version | head -n 1)"
  echo "flatc: $(flatc --version)"
} >"$out/machine.txt"
echo "ROUNDS=$ROUNDS PAIRS=$PAIRS WARMUP=$WARMUP N=$N ITERS=$ITERS GEN=$GEN bash bench/results/2026-11-27-tflite-open/run.sh $out" >"$out/command.txt"

# The load average every 10 s: the machine is shared.
(while :; do echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 10; done) >"$out/load.txt" &
loadpid=$!
trap 'kill $loadpid 2>/dev/null || true' EXIT

: >"$out/pairbench.jsonl"
: >"$out/single.jsonl"
for f in ../shared/models/tflite/*.tflite "$GEN/tflite-ext-1G-sparse.tflite"; do
  n=$N iters=$ITERS
  case "$f" in "$GEN"/*) n=20 iters=200 ;; esac
  for mode in verify pread; do
    cmd=("$BIN/pairbench" -rounds "$ROUNDS" -pairs "$PAIRS" -warmup "$WARMUP" -n "$n"
      -a "$BIN/cxxtflite $mode $f serve" -b "$BIN/loadbench -serve $f")
    echo "${cmd[*]}" >>"$out/command.txt"
    "${cmd[@]}" | tee -a "$out/pairbench.jsonl"
  done
  for mode in verify pread; do "$BIN/cxxtflite" $mode "$f" $iters >>"$out/single.jsonl"; done
  "$BIN/loadbench" -n $iters "$f" >>"$out/single.jsonl"
done

# The table: edgeload over C++ verify (and pread), medians, both methods.
python3 - "$out/pairbench.jsonl" "$out/single.jsonl" >"$out/table.md" <<'PY'
import json, os, sys
pair, single = {}, {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    _, mode, f, _ = r["a"].split(" ")
    pair.setdefault(os.path.basename(f).removesuffix(".tflite"), {})[mode] = r
for line in open(sys.argv[2]):
    r = json.loads(line)
    name = os.path.basename(r["file"]).removesuffix(".tflite")
    single.setdefault(name, {})[r.get("mode", "edgeload")] = r
print("| file | C++ verify (plain loop) | edgeload (plain loop) | plain loop: ÷ verify / ÷ pread | pairbench: ÷ verify / ÷ pread (median) | pairbench p10-p90 ÷ verify |")
print("|---|---:|---:|---:|---:|---:|")
for name, m in pair.items():
    s = single[name]
    cv, cp, e = s["cxx-verify"]["median_us"], s["cxx-pread"]["median_us"], s["whole"]["median_us"]
    v, p = m["verify"], m["pread"]
    print(f"| {name} | {cv:.1f} µs | {e:.1f} µs | {e/cv:.2f} / {e/cp:.2f} | {v['ratio_median']:.2f} / {p['ratio_median']:.2f} "
          f"| {v['pair_ratio_p10']:.2f}-{v['pair_ratio_p90']:.2f} |")
PY
cat "$out/table.md"
