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
# SASS for sm_90 only (90-real: no PTX to carry). Writes, per target,
# $OUT/TARGET.txz.part00, part01, ...; put one back together here with
# `cat TARGET.txz.part* > .gpubin/TARGET.txz`, carry it, and unpack it with
# `tar -xJf` into a folder to use as LLAMA (or LLAMA_BIN) for
# scripts/gpu_hybrid_default_check.sh and friends.
#
# The carry budget: the tree (~26 MB, 15 of it model/weights and the older
# bench/results/raw-* folders), our packed layerstream (~14 MB) and one
# llama.cpp tool (~33 MB xz with PTX, session 28) go over the device's 64
# MiB. Session 28 moved model/weights and raw-2026-12-0[123]* out of the
# working tree for the one call that carried llama-batched-bench, and back
# after it (untracked deletions travel as absent files).
# Session 56 built llama-bench alone this way (bench/results/raw-2026-12-07-s56/
# call2/run.sh: 229 s on the machine, 90-real): it came back as one 10.4 MB
# part, kept here as .gpubin/llama-bench.txz, and a call carries it beside
# .gpubin/bin.txz and the tree (62.5 of the 64 MiB; move model/weights/*.gguf
# aside for that call if the device tool says the tree is too large), as
# raw-2026-12-07-s56/call4/run.sh does.
# Environment: TARGETS (default "llama-batched-bench llama-bench"), JOBS
# (default 15).
set -euo pipefail
src=${1:?usage: gpu_llamacpp_build.sh SRC.txz [BUILD_DIR]}
dir=${2:-/tmp/ll}
out=${OUT:?set OUT to the folder that comes back}
targets=${TARGETS:-llama-batched-bench llama-bench}
mkdir -p "$dir"
# The build's log stays on the machine ($OUT returns at most 8 files); its
# tail is printed if the build fails.
log="$dir/llbuild.txt"
tar -xJf "$src" -C "$dir"
cmake -S "$dir" -B "$dir/b" -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90-real -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DBUILD_SHARED_LIBS=OFF -DCMAKE_BUILD_TYPE=Release > "$log" 2>&1 ||
  { tail -30 "$log"; exit 1; }
# shellcheck disable=SC2086
cmake --build "$dir/b" -j "${JOBS:-15}" --target $targets >> "$log" 2>&1 || { tail -30 "$log"; exit 1; }
cd "$dir/b/bin"
# shellcheck disable=SC2086
strip $targets
for t in $targets; do
  XZ_OPT="-6 -T${JOBS:-15}" tar -cJf - "$t" | split -b 15M -d -a 2 - "$out/$t.txz.part"
done
ls -la "$out"
