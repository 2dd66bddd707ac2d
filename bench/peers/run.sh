#!/usr/bin/env bash
# Runs the peers benchmark (issues #33 and #36) and keeps its raw output.
#
# Usage (from the repository root):
#   bash bench/peers/run.sh [OUTDIR]
# Environment: ROUNDS (8), CYCLES (12), WARMUP (2), BLOCK_MS (20),
#   FILES (/tmp/peerbench-files), NICE (unset: no renice; -10 as in bench/run.sh).
# Builds peerbench (Go), the Rust safetensors harness (cargo) and the
# llama.cpp GGUF harness (llamacpp/build.sh: pip download + cmake), writes
# the model-shaped files into FILES and runs every case; OUTDIR defaults to
# bench/results/<date>-<commit>-peers.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
commit=$(git rev-parse --short HEAD)
out=${1:-bench/results/$(date -u +%F)-$commit-peers}
mkdir -p "$out"
out=$(cd "$out" && pwd)
files=${FILES:-/tmp/peerbench-files}

(cd bench/peers && go build -o /tmp/peerbench-bin ./cmd/peerbench)
(cd bench/peers/rust-safetensors && cargo build --release --locked >&2)
rust=$root/bench/peers/rust-safetensors/target/release/st-harness
llama=$(bash bench/peers/llamacpp/build.sh /tmp/peers-llamacpp | tail -1)

{
	echo "date: $(date -u +%FT%TZ)"
	echo "commit: $(git rev-parse HEAD)"
	echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') x $(nproc)"
	echo "kernel: $(uname -r)"
	echo "memory: $(free -h | awk '/Mem:/ {print $2}')"
	echo "go: $(go version)"
	echo "rustc: $(rustc --version)"
	echo "g++: $(g++ --version | head -1)"
	echo "peers: gguf-parser-go $(cd bench/peers && go list -m -f '{{.Version}}' github.com/gpustack/gguf-parser-go)," \
		"nlpodyssey/safetensors $(cd bench/peers && go list -m -f '{{.Version}}' github.com/nlpodyssey/safetensors)," \
		"safetensors crate $(grep -A1 'name = "safetensors"' bench/peers/rust-safetensors/Cargo.lock | sed -n 's/version = "\(.*\)"/\1/p')," \
		"memmap2 $(grep -A1 'name = "memmap2"' bench/peers/rust-safetensors/Cargo.lock | sed -n 's/version = "\(.*\)"/\1/p')," \
		"llama.cpp from llama-cpp-python ${LLAMA_CPP_PYTHON_VERSION:-0.3.36} (ggml-base, Release)"
} >"$out/machine.txt"

# the load average every 10 s while the benchmark runs
(while :; do echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 10; done) >"$out/load.txt" &
loadpid=$!
trap 'kill $loadpid' EXIT

cmd=(/tmp/peerbench-bin run -dir "$files" -rounds "${ROUNDS:-8}" -cycles "${CYCLES:-12}" -warmup "${WARMUP:-2}"
	-block-ms "${BLOCK_MS:-20}" -rust "$rust" -llama "$llama" -out "$out")
echo "${cmd[*]}" >"$out/command.txt"
if [ -n "${NICE:-}" ]; then
	nice -n "$NICE" "${cmd[@]}" | tee "$out/tables.md"
else
	"${cmd[@]}" | tee "$out/tables.md"
fi
