#!/usr/bin/env bash
# Fuzz the GGUF reader with libFuzzer for SECONDS (default 60).
#   scripts/fuzz.sh [SECONDS]
# Builds fuzz_gguf with clang (ASan + UBSan + libFuzzer) in its own build
# directory ($LS_FUZZ_BUILD, default build-fuzz), runs it over a copy of the
# committed seed corpus (tests/fuzz/corpus; the copy grows, the seeds do not),
# and exits non-zero if it finds a crash, a leak, a timeout or an
# out-of-memory; the input that did it is saved under the build directory and
# its path printed. Needs on Debian 12: clang, libclang-rt-14-dev, cmake, and
# the project's build dependencies (the configure step finds them).
set -euo pipefail

secs="${1:-60}"
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" -lt 1 ]; then
  echo "usage: $0 [SECONDS]" >&2
  exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${LS_FUZZ_BUILD:-$root/build-fuzz}"

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
CC=clang CXX=clang++ cmake -S "$root" -B "$build" "${generator[@]}" \
  -DLS_FUZZ=ON -DLS_ENABLE_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target fuzz_gguf

corpus="$build/fuzz-corpus"
artifacts="$build/fuzz-artifacts"
rm -rf "$corpus"
mkdir -p "$corpus" "$artifacts"
cp "$root"/tests/fuzz/corpus/* "$corpus"/

echo "fuzz.sh: fuzzing the GGUF reader for ${secs}s over $(ls "$corpus" | wc -l) seeds"
set +e
# -timeout: one input taking 10 s is a bug (hang); -rss_limit_mb: the reader
# must not allocate far beyond its input; leaks are reported (ASan default).
ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}" \
UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
  "$build/fuzz_gguf" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
  -max_len=8192 -dict="$root/tests/fuzz/gguf.dict" -print_final_stats=1 \
  -artifact_prefix="$artifacts/" "$corpus"
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
  echo "fuzz.sh: FAILED (exit $rc); reproducer(s) in $artifacts:" >&2
  ls -l "$artifacts" >&2
  echo "rerun one with: $build/fuzz_gguf $artifacts/<file>" >&2
  exit 1
fi
echo "fuzz.sh: no crash in ${secs}s; corpus grew to $(ls "$corpus" | wc -l) inputs"
