#!/bin/bash
# Paired warm runs on a shared machine: each round runs openssl dgst -sha256
# and then each edgeload variant, back to back, so that the load they meet
# is alike; the summary gives, per variant, the median of its wall-time
# ratios to the openssl run of the same round, and the medians of CPU time.
#
#   sudo setsid bash bench/results/2026-11-27-signing/pairs.sh /work/big/pte-4G.pte   # after run.sh signed it
set -eu
MODEL=${1:-/work/big/pte-4G.pte}
OUT=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${ROUNDS:-9}
NICE=${NICE:--20}
SIGS=$(dirname "$MODEL")/oms
KEY=signing/testdata/oms/keys/ec-p256
BIN=/tmp/edgeload-signing-bench
# With autogroup scheduling (kernel.sched_autogroup_enabled=1), nice only
# orders processes within a session; against other sessions what counts is
# the session's autogroup nice. Run this under setsid so that it has a
# session of its own.
if [ -w /proc/self/autogroup ]; then echo "$NICE" > /proc/self/autogroup || true; fi
base=$(basename "$MODEL")
go build -o "$BIN" ./cmd/edgeload
RAW=$OUT/pairs-raw.txt
echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD) $MODEL nice $NICE, $(cat /proc/self/autogroup 2>/dev/null); load before: $(cat /proc/loadavg)" >> "$RAW"
declare -A CMD=(
	[openssl]="openssl dgst -sha256 $MODEL"
	[files-1core]="env GOMAXPROCS=1 $BIN verify --signature $SIGS/$base.files.sig --key $KEY.pub.pem $MODEL"
	[files]="$BIN verify --signature $SIGS/$base.files.sig --key $KEY.pub.pem $MODEL"
	[shards-1core]="env GOMAXPROCS=1 $BIN verify --signature $SIGS/$base.shards.sig --key $KEY.pub.pem $MODEL"
	[shards]="$BIN verify --signature $SIGS/$base.shards.sig --key $KEY.pub.pem $MODEL"
)
ORDER="openssl files-1core files shards-1core shards"
cat "$MODEL" > /dev/null # warm the page cache
for r in $(seq "$ROUNDS"); do
	for l in $ORDER; do
		nice -n "$NICE" /usr/bin/time -o /tmp/signing-pairs-time -f "%e %U %S" ${CMD[$l]} > /dev/null
		echo "$r $l $(cat /tmp/signing-pairs-time) load=$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$RAW"
	done
done
echo "# load after: $(cat /proc/loadavg)" >> "$RAW"
python3 - "$RAW" "$OUT/pairs-summary.md" <<'PY'
import sys, statistics, collections
lines = open(sys.argv[1]).read().splitlines()
start = max(i for i, l in enumerate(lines) if l.startswith("# ") and "load before" in l)
rounds = collections.defaultdict(dict)
for l in lines[start:]:
    f = l.split()
    if len(f) == 6 and not l.startswith("#"):
        rounds[f[0]][f[1]] = (float(f[2]), float(f[3]) + float(f[4]), f[5])
labels = ["openssl", "files-1core", "files", "shards-1core", "shards"]
out = ["# Paired warm runs, medians", "", lines[start].lstrip("# "), "",
       "| command | rounds | wall s | CPU s (user+sys) | wall ÷ openssl's, same round | CPU ÷ openssl's, same round |", "|---|---:|---:|---:|---:|---:|"]
for lb in labels:
    rs = [r for r in rounds.values() if lb in r and "openssl" in r]
    w = statistics.median(r[lb][0] for r in rs)
    c = statistics.median(r[lb][1] for r in rs)
    rw = statistics.median(r[lb][0] / r["openssl"][0] for r in rs)
    rc = statistics.median(r[lb][1] / r["openssl"][1] for r in rs)
    name = "openssl dgst -sha256" if lb == "openssl" else "edgeload verify --signature, " + lb.replace("-1core", ", GOMAXPROCS=1")
    out.append(f"| {name} | {len(rs)} | {w:.2f} | {c:.2f} | {rw:.2f} | {rc:.2f} |")
open(sys.argv[2], "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
