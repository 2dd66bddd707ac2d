#!/usr/bin/env bash
# Builds the llama.cpp GGUF harness: fetches the llama-cpp-python sdist with
# pip (the llama.cpp it vendors is the one `pip install llama-cpp-python`
# builds), builds only ggml's base library (ggml.c, gguf.cpp, ...; no CPU or
# GPU backends) with cmake in Release mode, and links gguf_harness.cc to it.
#
# Usage: bash bench/peers/llamacpp/build.sh [OUTDIR]   (default /tmp/peers-llamacpp)
# Prints the harness's path. Nothing upstream is copied into the repository.
set -euo pipefail
VERSION=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/peers-llamacpp}
mkdir -p "$out"
cd "$out"
if [ ! -f "llama_cpp_python-$VERSION.tar.gz" ]; then
	pip download "llama-cpp-python==$VERSION" --no-deps --no-binary :all: -d . >&2
fi
if [ ! -d "llama_cpp_python-$VERSION" ]; then
	tar xzf "llama_cpp_python-$VERSION.tar.gz" "llama_cpp_python-$VERSION/vendor/llama.cpp/ggml"
fi
ggml="$out/llama_cpp_python-$VERSION/vendor/llama.cpp/ggml"
# The sdist leaves out ggml.pc.in, which ggml's CMakeLists.txt configures
# (a pkg-config file): an empty one lets it configure.
[ -f "$ggml/ggml.pc.in" ] || : >"$ggml/ggml.pc.in"
cmake -S "$ggml" -B build -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
	-DGGML_CPU=OFF -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF -DGGML_OPENMP=OFF >&2
cmake --build build --target ggml-base -j 2 >&2
lib=$(find build -name 'libggml-base.a' | head -1)
g++ -O2 -std=c++17 -I"$ggml/include" -o gguf_harness "$here/gguf_harness.cc" "$lib" -lpthread -lm
echo "$out/gguf_harness"
