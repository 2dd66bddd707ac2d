#!/bin/bash
# ab.sh BEFORE.test AFTER.test REGEX ROUNDS OUT: alternate two test binaries of
# loader/pte (run from that folder, which the real-file benchmarks need),
# then print the min and median cpu-ns/op per benchmark and binary.
set -euo pipefail
out=$5; : > "$out"
for r in $(seq "${4:-5}"); do
  for b in "$1" "$2"; do
    "$b" -test.run '^$' -test.bench "$3" -test.count 1 -test.cpu 1 -test.benchtime 0.3s 2>&1 | grep '^Benchmark' | sed "s|^|$(basename "$b") |" >> "$out"
  done
done
python3 - "$out" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    f = l.split()
    d[(f[1], f[0])].append(float(f[f.index("cpu-ns/op")-1]))
names = sorted({k[0] for k in d}); bins = sorted({k[1] for k in d})
for n in names:
    row = [f"{n:55s}"]
    for b in bins:
        v = d.get((n, b))
        row.append(f"{b}: min {min(v):9.0f} med {statistics.median(v):9.0f}" if v else f"{b}: -")
    print("  ".join(row))
PY
