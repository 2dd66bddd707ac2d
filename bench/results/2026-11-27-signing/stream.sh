#!/usr/bin/env bash
# Verified against unverified streaming (issue 44): `edgeload stream` of a
# 4 GiB GGUF with a 64 MiB budget inside a 256 MiB memory cgroup, page cache
# dropped before every run, ROUNDS rounds of: no signature, the files
# signature, the shards signature. As root, cgroup v1 or v2:
#   go run ./bench/cmd/loadbench -gen /work/big gguf-4G
#   /work/venvs/oms/bin/python bench/results/2026-11-27-signing/sign.py /work/big/gguf-4G.gguf gguf-4G.files.sig PRIV.pem files
#   /work/venvs/oms/bin/python bench/results/2026-11-27-signing/sign.py /work/big/gguf-4G.gguf gguf-4G.shards16M.sig PRIV.pem shards 16777216
#   sudo bash bench/results/2026-11-27-signing/stream.sh /work/big/gguf-4G.gguf FILES.sig SHARDS.sig KEY.pem
set -euo pipefail
cd "$(dirname "$0")/../../.."
model=${1:?model} files=${2:?files.sig} shards=${3:?shards.sig} key=${4:?key.pem}
rounds=${ROUNDS:-3}
bin=$(mktemp -d)/edgeload
go build -o "$bin" ./cmd/edgeload
echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -d /sys/fs/cgroup/memory ]; then v=1; else v=2; fi
run() { # name args...
  local name=$1; shift
  local g
  if [ $v = 1 ]; then
    g=/sys/fs/cgroup/memory/edgeload-stream-verify-$$
    mkdir -p $g; echo $((256 << 20)) > $g/memory.limit_in_bytes
  else
    g=/sys/fs/cgroup/edgeload-stream-verify-$$
    mkdir -p $g; echo $((256 << 20)) > $g/memory.max; echo 0 > $g/memory.swap.max
  fi
  sync; echo 3 > /proc/sys/vm/drop_caches
  local t0=$EPOCHREALTIME
  local out rc=0
  out=$(bash -c "echo \$\$ > $g/$([ $v = 1 ] && echo tasks || echo cgroup.procs); exec \"\$@\"" _ "$bin" stream --budget 64MiB --drop-cache "$@" "$model" 2>&1) || rc=$?
  local t1=$EPOCHREALTIME
  local peak oom
  if [ $v = 1 ]; then
    peak=$(($(cat $g/memory.max_usage_in_bytes) >> 20)); oom=$(awk '/oom_kill /{print $2}' $g/memory.oom_control)
  else
    peak=$(($(cat $g/memory.peak) >> 20)); oom=$(awk '/oom_kill /{print $2}' $g/memory.events)
  fi
  rmdir $g
  printf '%-10s wall %6.2f s  cgroup peak %4d MiB  oom_kill %s  exit %d  | %s\n' "$name" "$(echo "$t1 - $t0" | bc)" "$peak" "${oom:-0}" "$rc" "$(echo "$out" | tail -1)"
}
for r in $(seq "$rounds"); do
  echo "round $r"
  run plain
  run files --signature "$files" --key "$key"
  run shards --signature "$shards" --key "$key"
done
