#!/usr/bin/env bash
# Open of every real .pte and .tflite, of pte-4G and of tflite-ext-1G,
# against the C++ Verifier loads (bench/cxxload verify: what ExecuTorch's
# loader does with flatbuffers::Verifier; bench/cxxtflite verify: what
# LiteRT's VerifyAndBuildFromFile does), edgeload before (main at BEFORE)
# and after (the checked-out commit), measured two ways:
#
#   plain loop  each loader alone for N loads in one process (loadbench -n,
#               cxxload/cxxtflite FILE N), the three interleaved file by file,
#               ROUNDS rounds (loop-pte.jsonl, loop-tflite.jsonl);
#   pairbench   the C++ loader and edgeload after interleaved in blocks of
#               loads, PAIRROUNDS rounds of PAIRS pairs (pairbench-pte.jsonl,
#               pairbench-tflite.jsonl).
#
# Usage, from anywhere in the repository (it takes a few minutes):
#
#   bash bench/results/2026-11-27-open-speed/run.sh [OUTDIR]
#
# Environment: BIN (/tmp/open-speed-bin, where the binaries go), GEN
# (/work/big: pte-4G.pte, written by `loadbench -gen GEN pte-4G` when
# missing, and tflite-ext-1G-sparse.tflite, by `loadbench -gen GEN -sparse
# tflite-ext-1G`), BEFORE (97ad439), ROUNDS (9), PAIRROUNDS (5), PAIRS (10),
# N (2000), PART (all, pte or tflite). It writes machine.txt, command.txt,
# load.txt (the load average every 10 s), the .jsonl files and tables.md
# (table.py).
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-bench/results/2026-11-27-open-speed}
BIN=${BIN:-/tmp/open-speed-bin} GEN=${GEN:-/work/big} BEFORE=${BEFORE:-97ad439}
ROUNDS=${ROUNDS:-9} PAIRROUNDS=${PAIRROUNDS:-5} PAIRS=${PAIRS:-10} N=${N:-2000} PART=${PART:-all}
mkdir -p "$out" "$BIN" "$GEN"
out=$(cd "$out" && pwd)

# The C++ loaders, from the schemas of this commit (flatc 2.0.8).
flatc --cpp -o "$BIN" internal/schema/program.fbs internal/schema/tflite.fbs internal/schema/tflite_options.fbs
g++ -O2 -std=c++17 -I"$BIN" -o "$BIN/cxxload" bench/cxxload/load.cc
g++ -O2 -std=c++17 -Wall -Werror -I"$BIN" -o "$BIN/cxxtflite" bench/cxxtflite/load.cc
# edgeload after (this tree) and before (BEFORE, from git archive).
go build -o "$BIN/loadbench-after" ./bench/cmd/loadbench
go build -o "$BIN/pairbench" ./bench/cmd/pairbench
rm -rf "$BIN/before" && mkdir -p "$BIN/before"
git archive "$BEFORE" | tar -x -C "$BIN/before"
(cd "$BIN/before" && go build -o "$BIN/loadbench-before" ./bench/cmd/loadbench)
[ -e "$GEN/pte-4G.pte" ] || "$BIN/loadbench-after" -gen "$GEN" pte-4G
[ -e "$GEN/tflite-ext-1G-sparse.tflite" ] || "$BIN/loadbench-after" -gen "$GEN" -sparse tflite-ext-1G

{
  echo "date: $(date -u +%FT%TZ)"
  echo "after: $(git rev-parse HEAD)$(git diff --quiet HEAD -- loader internal bench mmapfile || echo ' (modified)')"
  echo "before: $(git rev-parse "$BEFORE")"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) x $(nproc)"
  echo "kernel: $(uname -r)"
  echo "go: $(go version)"
  echo "g++: $(g++ --version | head -n 1)"
  echo "flatc: $(flatc --version)"
} >"$out/machine.txt"
echo "BIN=$BIN GEN=$GEN BEFORE=$BEFORE ROUNDS=$ROUNDS PAIRROUNDS=$PAIRROUNDS PAIRS=$PAIRS N=$N PART=$PART bash bench/results/2026-11-27-open-speed/run.sh ${1:-}" >"$out/command.txt"

# The load average every 10 s: the machine is shared.
(while :; do echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 10; done) >>"$out/load.txt" &
loadpid=$!
trap 'kill $loadpid 2>/dev/null || true' EXIT

pte=(../shared/models/pte/*.pte "$GEN/pte-4G.pte")
tfl=(../shared/models/tflite/*.tflite "$GEN/tflite-ext-1G-sparse.tflite")

if [ "$PART" != tflite ]; then
  : >"$out/loop-pte.jsonl"
  for r in $(seq "$ROUNDS"); do
    for f in "${pte[@]}"; do
      "$BIN/cxxload" verify "$f" "$N" >>"$out/loop-pte.jsonl"
      "$BIN/loadbench-before" -n "$N" -touch none "$f" >>"$out/loop-pte.jsonl"
      "$BIN/loadbench-after" -n "$N" -touch none "$f" >>"$out/loop-pte.jsonl"
    done
  done
  : >"$out/pairbench-pte.jsonl"
  for f in "${pte[@]}"; do
    n=100
    case "$f" in "$GEN"/*) n=20 ;; esac
    cmd=("$BIN/pairbench" -rounds "$PAIRROUNDS" -pairs "$PAIRS" -n "$n" -a "$BIN/cxxload verify $f serve" -b "$BIN/loadbench-after -serve $f")
    echo "${cmd[*]}" >>"$out/command.txt"
    "${cmd[@]}" >>"$out/pairbench-pte.jsonl"
  done
fi

if [ "$PART" != pte ]; then
  : >"$out/loop-tflite.jsonl"
  for r in $(seq "$ROUNDS"); do
    for f in "${tfl[@]}"; do
      "$BIN/cxxtflite" verify "$f" "$N" >>"$out/loop-tflite.jsonl"
      "$BIN/loadbench-before" -n "$N" "$f" >>"$out/loop-tflite.jsonl"
      "$BIN/loadbench-after" -n "$N" "$f" >>"$out/loop-tflite.jsonl"
    done
  done
  : >"$out/pairbench-tflite.jsonl"
  for f in "${tfl[@]}"; do
    n=100
    case "$f" in "$GEN"/*) n=20 ;; esac
    cmd=("$BIN/pairbench" -rounds "$PAIRROUNDS" -pairs "$PAIRS" -n "$n" -a "$BIN/cxxtflite verify $f serve" -b "$BIN/loadbench-after -serve $f")
    echo "${cmd[*]}" >>"$out/command.txt"
    "${cmd[@]}" >>"$out/pairbench-tflite.jsonl"
  done
fi

python3 "$(dirname "$0")/table.py" "$out" >"$out/tables.md"
cat "$out/tables.md"
