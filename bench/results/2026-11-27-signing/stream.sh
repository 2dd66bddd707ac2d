#!/usr/bin/env bash
# Verified against unverified streaming (issue 44): `edgeload stream` of a
# 4 GiB GGUF with a 64 MiB budget inside a 256 MiB memory cgroup, page cache
# dropped before every run, ROUNDS rounds of: no signature, the files
# signature, each shards signature. Then, with the file in the page cache
# (no disk), one run of each signature: the time the hashing alone needs on
# this machine's cores, the floor under the verified runs. As root, cgroup
# v1 or v2:
#   go run ./bench/cmd/loadbench -gen /work/big gguf-4G
#   /work/venvs/oms/bin/python bench/results/2026-11-27-signing/sign.py /work/big/gguf-4G.gguf gguf-4G.files.sig PRIV.pem files
#   /work/venvs/oms/bin/python bench/results/2026-11-27-signing/sign.py /work/big/gguf-4G.gguf gguf-4G.shards4M.sig PRIV.pem shards 4194304
#   sudo bash bench/results/2026-11-27-signing/stream.sh /work/big/gguf-4G.gguf KEY.pem FILES.sig SHARDS.sig...
set -euo pipefail
cd "$(dirname "$0")/../../.."
model=${1:?model} key=${2:?key.pem}
shift 2
sigs=("$@")
rounds=${ROUNDS:-3}
bin=$(mktemp -d)/edgeload
go build -o "$bin" ./cmd/edgeload
echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -d /sys/fs/cgroup/memory ]; then v=1; else v=2; fi
run() { # name cold|warm args...
  local name=$1 temp=$2; shift 2
  local g
  if [ $v = 1 ]; then
    g=/sys/fs/cgroup/memory/edgeload-stream-verify-$$
    mkdir -p $g; echo $((256 << 20)) > $g/memory.limit_in_bytes
  else
    g=/sys/fs/cgroup/edgeload-stream-verify-$$
    mkdir -p $g; echo $((256 << 20)) > $g/memory.max; echo 0 > $g/memory.swap.max
  fi
  local drop=--drop-cache
  if [ "$temp" = cold ]; then
    sync; echo 3 > /proc/sys/vm/drop_caches
  else
    cat "$model" > /dev/null # into the page cache, charged outside the cgroup
    drop=
  fi
  local t0=$EPOCHREALTIME
  local out rc=0
  out=$(bash -c "echo \$\$ > $g/$([ $v = 1 ] && echo tasks || echo cgroup.procs); exec \"\$@\"" _ "$bin" stream --budget 64MiB $drop "$@" "$model" 2>&1) || rc=$?
  local t1=$EPOCHREALTIME
  local peak oom
  if [ $v = 1 ]; then
    peak=$(($(cat $g/memory.max_usage_in_bytes) >> 20)); oom=$(awk '/oom_kill /{print $2}' $g/memory.oom_control)
  else
    peak=$(($(cat $g/memory.peak) >> 20)); oom=$(awk '/oom_kill /{print $2}' $g/memory.events)
  fi
  rmdir $g
  printf '%-24s %s wall %6.2f s  cgroup peak %4d MiB  oom_kill %s  exit %d  | %s\n' "$name" "$temp" "$(echo "$t1 - $t0" | bc)" "$peak" "${oom:-0}" "$rc" "$(echo "$out" | tail -1)"
}
for r in $(seq "$rounds"); do
  echo "round $r"
  run plain cold
  for s in "${sigs[@]}"; do
    run "$(basename "$s")" cold --signature "$s" --key "$key"
  done
done
echo "page cache warm"
run plain warm
for s in "${sigs[@]}"; do
  run "$(basename "$s")" warm --signature "$s" --key "$key"
done
