#!/bin/bash
# Issue 44's measurements: edgeload verify --signature against model_signing
# 1.1.1's verify and the SHA-256 floors (openssl dgst -sha256, sha256sum) on
# a 4 GiB model, page cache warm and cold, files and shards serialization.
#
#   go run ./bench/cmd/loadbench -gen /work/big pte-4G gguf-4G
#   python3 -m venv /work/venvs/oms && /work/venvs/oms/bin/pip install model-signing==1.1.1 pyopenssl
#   sudo setsid bash bench/results/2026-11-27-signing/run.sh /work/big/pte-4G.pte   # from the repository root
#
# Signs the model once (sign.py, key method, files and default 1 GB shards),
# then runs every command ROUNDS times in turn, warm (after one unmeasured
# run) and cold (sync; echo 3 > /proc/sys/vm/drop_caches before each run),
# each under /usr/bin/time at nice NICE (default -20, so that other work on
# a shared machine disturbs it less). Writes raw.txt (one line a run) and
# summary.md (medians). Root is needed to drop the page cache and to nice.
set -eu
MODEL=${1:-/work/big/pte-4G.pte}
OUT=$(cd "$(dirname "$0")" && pwd)
VENV=${VENV:-/work/venvs/oms}
ROUNDS=${ROUNDS:-3}
NICE=${NICE:--20}
SIGS=${SIGS:-$(dirname "$MODEL")/oms}
KEY=signing/testdata/oms/keys/ec-p256
BIN=/tmp/edgeload-signing-bench
# With autogroup scheduling (kernel.sched_autogroup_enabled=1), nice only
# orders processes within a session; against other sessions what counts is
# the session's autogroup nice. Run this under setsid so that it has a
# session of its own.
if [ -w /proc/self/autogroup ]; then echo "$NICE" > /proc/self/autogroup || true; fi
mkdir -p "$SIGS"
go build -o "$BIN" ./cmd/edgeload
base=$(basename "$MODEL")
for s in files shards; do
	[ -f "$SIGS/$base.$s.sig" ] || "$VENV/bin/python" "$OUT/sign.py" "$MODEL" "$SIGS/$base.$s.sig" "$KEY.priv.pem" $s
done
RESULTS=${RESULTS:-$OUT}
RAW=$RESULTS/raw.txt
{
	echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD) $(uname -r) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) nproc=$(nproc) $(go version | cut -d' ' -f3)"
	echo "# model $MODEL $(stat -c %s "$MODEL") bytes; nice $NICE, $(cat /proc/self/autogroup 2>/dev/null); load before: $(cat /proc/loadavg)"
} >> "$RAW"

# The commands, by label.
declare -A CMD=(
	[openssl]="openssl dgst -sha256 $MODEL"
	[sha256sum]="sha256sum $MODEL"
	[edgeload-files-1core]="env GOMAXPROCS=1 $BIN verify --signature $SIGS/$base.files.sig --key $KEY.pub.pem $MODEL"
	[edgeload-files]="$BIN verify --signature $SIGS/$base.files.sig --key $KEY.pub.pem $MODEL"
	[edgeload-shards-1core]="env GOMAXPROCS=1 $BIN verify --signature $SIGS/$base.shards.sig --key $KEY.pub.pem $MODEL"
	[edgeload-shards]="$BIN verify --signature $SIGS/$base.shards.sig --key $KEY.pub.pem $MODEL"
	[model_signing-files]="$VENV/bin/model_signing verify key $MODEL --signature $SIGS/$base.files.sig --public_key $KEY.pub.pem"
	[model_signing-shards]="$VENV/bin/python $OUT/verify_shards.py $MODEL $SIGS/$base.shards.sig $KEY.pub.pem"
)
ORDER="openssl sha256sum edgeload-files-1core edgeload-files edgeload-shards-1core edgeload-shards model_signing-files model_signing-shards"

run() { # cache label
	if [ "$1" = cold ]; then # drop the page cache before the run
		sync
		echo 3 > /proc/sys/vm/drop_caches
	fi
	nice -n "$NICE" /usr/bin/time -o /tmp/signing-bench-time -f "%e %M %U %S" ${CMD[$2]} > /tmp/signing-bench-out 2>&1 || {
		echo "FAILED: $2"
		cat /tmp/signing-bench-out
		exit 1
	}
	echo "$1 $2 $(cat /tmp/signing-bench-time) load=$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$RAW"
}

for cache in warm cold; do
	for r in $(seq "$ROUNDS"); do
		for l in $ORDER; do
			[ "$cache" = warm ] && [ "$r" = 1 ] && run prewarm "$l" # fills the cache; not in the summary
			run "$cache" "$l"
		done
	done
done
echo "# load after: $(cat /proc/loadavg)" >> "$RAW"

# Medians of the last run of this script (fields: wall s, peak RSS KB, user s, sys s).
python3 - "$RAW" "$RESULTS/summary.md" <<'PY'
import sys, statistics, collections
lines = open(sys.argv[1]).read().splitlines()
start = max(i for i, l in enumerate(lines) if l.startswith("# ") and " nproc=" in l)
head = lines[start:start + 2]
runs = collections.defaultdict(list)
for l in lines[start:]:
    f = l.split()
    if len(f) >= 6 and f[0] in ("warm", "cold"):
        runs[(f[0], f[1])].append((float(f[2]), int(f[3]), float(f[4]), float(f[5])))
out = ["# edgeload verify --signature on a 4 GiB model: medians", "", *[h.lstrip("# ") for h in head], "",
       "| cache | command | runs | wall s | peak RSS MiB | user s | sys s | wall ÷ openssl |", "|---|---|---:|---:|---:|---:|---:|---:|"]
for cache in ("warm", "cold"):
    ref = statistics.median(r[0] for r in runs[(cache, "openssl")])
    for (c, label), rs in runs.items():
        if c != cache:
            continue
        med = lambda i: statistics.median(r[i] for r in rs)
        out.append(f"| {cache} | {label} | {len(rs)} | {med(0):.2f} | {med(1)/1024:.1f} | {med(2):.2f} | {med(3):.2f} | {med(0)/ref:.2f} |")
open(sys.argv[2], "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
