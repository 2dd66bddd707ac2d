#!/bin/bash
# The benchmark model's two floors on this machine: the cold read of the
# whole file (page cache dropped, O_DIRECT) and the compute-only decode
# (model resident, -mode mmap), three rounds each. As root, from the
# repository root:
#
#   bash bench/results/DIR/run.sh [MODEL]
#
# MODEL defaults to /work/big/llama-q8-2g.gguf, from
#   go run ./bench/cmd/llamagen /work/big/llama-q8-2g.gguf
set -e
M=${1:-/work/big/llama-q8-2g.gguf}
BIN=$(mktemp -d)/llama
go build -o "$BIN" ./examples/llama
echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD) $(uptime)"
ls -l "$M"
for r in 1 2 3; do
	sync
	echo 3 >/proc/sys/vm/drop_caches
	echo "# cold read, round $r"
	dd if="$M" of=/dev/null bs=16M iflag=direct 2>&1 | tail -1
done
cat "$M" >/dev/null
for th in 2 1; do
	for r in 1 2 3; do
		echo "# compute only, $th threads, round $r"
		/usr/bin/time -f "cpu user %Us sys %Ss wall %es" "$BIN" -model "$M" -ids 1 -n 16 -mode mmap -threads "$th"
	done
done
echo "# $(uptime)"
