#!/usr/bin/env bash
# The measurements of this folder (see README.md). Run from the repository
# root with the binaries built as README.md says, in $B:
#   $B/cxxload, $B/loadbench-before (main at 01bc1cd), $B/loadbench-after
#   (this commit), $B/pairbench; $P4G the sparse pte-4G.
set -euo pipefail
B=${B:-/tmp/pteopen}
OUT=${OUT:-bench/results/2026-11-27-pte-open}
P4G=${P4G:-$B/models/pte-4G-sparse.pte}
files=(../shared/models/pte/addmul-external.pte ../shared/models/pte/apple-add-noheader.pte
  ../shared/models/pte/arduino-add.pte ../shared/models/pte/arduino-keyword-spotting.pte
  ../shared/models/pte/linear-external.pte ../shared/models/pte/linear-inline-constant-buffer.pte
  ../shared/models/pte/stories260k-qnn.pte "$P4G")
# 1. The plain loop: N loads in one process, the four loaders interleaved
# file by file, ROUNDS rounds.
{
  for r in $(seq "${ROUNDS:-3}"); do
    for f in "${files[@]}"; do
      "$B/cxxload" verify "$f" 2000
      "$B/loadbench-before" -n 2000 -touch none "$f"
      "$B/cxxload" pread "$f" 2000
      "$B/loadbench-after" -n 2000 -touch none "$f"
    done
  done
} > "$OUT/loop.jsonl"
# 2. pairbench: C++ (verify, pread) against edgeload before and after.
{
  for f in "${files[@]}"; do
    for m in verify pread; do
      for lb in loadbench-before loadbench-after; do
        "$B/pairbench" -rounds "${PAIRROUNDS:-3}" -pairs 10 -n 50 -a "$B/cxxload $m $f serve" -b "$B/$lb -serve $f"
      done
    done
  done
} > "$OUT/pairbench.jsonl"
