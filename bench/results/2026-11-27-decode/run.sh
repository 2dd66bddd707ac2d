#!/usr/bin/env bash
# The decode benchmark of docs/STREAMING.md: 16 tokens of the generated 2 GiB
# q8_0 Llama under memory cgroups of 25/50/75 % of the model, as root.
#   go run ./bench/cmd/llamagen /work/big/llama-q8-2g.gguf
#   sudo bash bench/results/2026-11-27-decode/run.sh /work/big/llama-q8-2g.gguf
# EDGELOAD_RUNTIMES_PYTHON names the Python with llama-cpp-python (internal/testkit/runtimes/install.sh).
set -euo pipefail
cd "$(dirname "$0")/../../.."
model=${1:?model}
dir=bench/results/2026-11-27-decode
go build -o /tmp/llama-main ./examples/llama
go run ./bench/cmd/decodebench -llama /tmp/llama-main -python "${EDGELOAD_RUNTIMES_PYTHON:?}" \
  -limits 25,50,75 -n 16 -readers direct,mapped -rounds 5 \
  -svg docs/decode.svg -json "$dir/raw.json" "$model" | tee "$dir/output.txt"
