#!/usr/bin/env bash
# Build llama.cpp's benchmark tools on the GPU machine, outside the project
# tree (never committed), and send them back in pieces small enough for the
# device tool's $OUT (16 MiB a file, 8 files), so that later calls carry the
# binaries instead of building again (about 3 minutes of a 10-minute call).
#
#   scripts/gpu_llamacpp_build.sh SRC.txz [BUILD_DIR]
#
# SRC.txz: a llama.cpp source tree packed from the fetched mirror, e.g.
#   (cd /work/.mirror/ggerganov+llama.cpp/repo && git archive HEAD -- . \
#      ':(exclude)models/*.gguf' | xz > .gpubin/llsrc.txz)
# BUILD_DIR: where to build (default /tmp/ll). Static (one file per tool),
# CUDA for sm_90. Writes $OUT/llama-bin.txz.part00, part01, ...; put them
# back together here with `cat llama-bin.txz.part* > .gpubin/llama-bin.txz`,
# carry that, and unpack it with `tar -xJf` into a folder to use as LLAMA
# (or LLAMA_BIN) for scripts/gpu_hybrid_default_check.sh and friends.
# Environment: TARGETS (default "llama-batched-bench llama-bench"), JOBS
# (default 15).
set -euo pipefail
src=${1:?usage: gpu_llamacpp_build.sh SRC.txz [BUILD_DIR]}
dir=${2:-/tmp/ll}
out=${OUT:?set OUT to the folder that comes back}
targets=${TARGETS:-llama-batched-bench llama-bench}
mkdir -p "$dir"
tar -xJf "$src" -C "$dir"
cmake -S "$dir" -B "$dir/b" -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DBUILD_SHARED_LIBS=OFF -DCMAKE_BUILD_TYPE=Release > "$out/llbuild.txt" 2>&1
# shellcheck disable=SC2086
cmake --build "$dir/b" -j "${JOBS:-15}" --target $targets >> "$out/llbuild.txt" 2>&1
cd "$dir/b/bin"
# shellcheck disable=SC2086
strip $targets
# shellcheck disable=SC2086
XZ_OPT="-6 -T${JOBS:-15}" tar -cJf - $targets | split -b 15M -d -a 2 - "$out/llama-bin.txz.part"
ls -la "$out"
