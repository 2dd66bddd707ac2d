#!/usr/bin/env bash
# Installs the upstream runtimes of requirements-runtimes.txt into a new
# virtual environment DIR, saying what it does as it goes:
#
#   bash internal/testkit/runtimes/install.sh DIR
#
# Phases: the venv; every pinned wheel with --no-deps (torch and the CUDA
# libraries it links, ExecuTorch, LiteRT, gguf-py, llama-cpp-python's build
# tools), one line of pip's a package; llama-cpp-python built from its sdist
# with --no-build-isolation by those tools, one line a build step of
# llama.cpp; then the versions the driver sees. Every line carries the
# seconds since the start, and a line a minute says that a quiet phase (a
# large download, unpacking torch) is still running. DIR/.complete is
# written last: a DIR without it is incomplete. PYTHON (default python3) is
# the interpreter the venv is made from; CMAKE_BUILD_PARALLEL_LEVEL
# (default 2) the build's jobs.
set -euo pipefail
[ $# = 1 ] || { echo "usage: install.sh DIR" >&2; exit 2; }
venv=$1
here=$(cd "$(dirname "$0")" && pwd)
req="$here/../../../requirements-runtimes.txt"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
t0=$SECONDS
stamp() { while IFS= read -r line; do printf '[%5ds] %.150s\n' $((SECONDS - t0)) "$line"; done; }
phase() { printf '[%5ds] --- %s\n' $((SECONDS - t0)) "$*"; }
ticker=
tick_start() { # a line a minute while a phase runs: elapsed and the venv's size
  (while sleep 60; do printf '[%5ds]     ... still running (%s in %s)\n' $((SECONDS - t0)) "$(du -sh "$venv" 2>/dev/null | cut -f1)" "$venv"; done) &
  ticker=$!
}
tick_stop() { [ -z "$ticker" ] || { kill "$ticker" 2>/dev/null; wait "$ticker" 2>/dev/null || true; ticker=; }; }
trap tick_stop EXIT
pip=("$venv/bin/pip" --disable-pip-version-check --no-input install --progress-bar off --no-deps)

phase "venv: ${PYTHON:-python3} -m venv $venv ($("${PYTHON:-python3}" --version))"
rm -rf "$venv"
"${PYTHON:-python3}" -m venv "$venv"

wheels=$(grep -Ev '^[[:space:]]*(#|$)|^llama-cpp-python==' "$req" | sed 's/[[:space:]]*#.*//')
sdist=$(grep -E '^llama-cpp-python==' "$req" | sed 's/[[:space:]]*#.*//')
phase "wheels: $(wc -l <<<"$wheels") pinned packages, --no-deps --only-binary :all: (about 3.2 GB to download on a fresh machine, 4.6 GB installed)"
tick_start
# shellcheck disable=SC2086
"${pip[@]}" --only-binary :all: $wheels 2>&1 | stamp
tick_stop

phase "$sdist: llama.cpp built from the sdist, --no-build-isolation, $CMAKE_BUILD_PARALLEL_LEVEL jobs (5-10 min on two free cores; pip reuses a wheel it built before)"
log="$venv/llama-cpp-python-build.log"
tick_start
# pip -v shows the build, kept whole in $log; of it, the lines that say how
# far it is: ninja's "[n/N] Building ..." lines (the package asks for the
# compilers' whole command lines, which the two variables turn off; where
# they still show, the sed keeps of each its step and its output file).
export SKBUILD_BUILD_VERBOSE=false SKBUILD_CMAKE_VERBOSE=false
set +o pipefail
"${pip[@]}" -v --no-build-isolation "$sdist" 2>&1 | tee "$log" |
  grep --line-buffered -E '^\s*\[[0-9]+/[0-9]+\] |^\s*-- (The C|The CXX|Build files)|Using cached|Downloading|Successfully (built|installed)' |
  sed -u -E 's/^\s*(\[[0-9]+\/[0-9]+\]) .* -o ([^ ]+).*/\1 \2/' | stamp
status=${PIPESTATUS[0]}
set -o pipefail
tick_stop
if [ "$status" != 0 ]; then
  tail -n 60 "$log"
  phase "failed (pip exit status $status): the build's whole log is $log"
  exit 1
fi

phase "versions the driver sees"
"$venv/bin/python" "$here/driver.py" versions </dev/null | stamp
touch "$venv/.complete"
phase "done: $(du -sh "$venv" | cut -f1) in $venv"
