#!/usr/bin/env bash
# Fuzz the GGUF reader, the safetensors header parser and the server's
# request parser with libFuzzer for SECONDS of fuzzing in all (default 60):
# two thirds to fuzz_gguf, one sixth each to fuzz_safetensors and
# fuzz_api_request (at least 1 s each), so the total stays what it was.
# On a machine of 2 or more cores fuzz_gguf runs on one core and the other
# two one after the other on the second, so the step takes the longer
# side's time (40 s of 60) rather than the sum.
#   scripts/fuzz.sh [SECONDS]
# Builds both targets with clang (ASan + UBSan + libFuzzer) in their own build
# directory ($LS_FUZZ_BUILD, default build-fuzz), runs each over a copy of its
# committed seed corpus (tests/fuzz/corpus, tests/fuzz/corpus_safetensors;
# the copies grow, the seeds do not), and exits non-zero if either finds a
# crash, a leak, a timeout or an out-of-memory; the input that did it is
# saved under the build directory and its path printed. Needs on Debian 12:
# clang, libclang-rt-14-dev, cmake, and the project's build dependencies
# (the configure step finds them).
set -euo pipefail

secs="${1:-60}"
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" -lt 1 ]; then
  echo "usage: $0 [SECONDS]" >&2
  exit 2
fi
st_secs=$((secs / 6))
[ "$st_secs" -ge 1 ] || st_secs=1
api_secs=$((secs / 3 - st_secs))
[ "$api_secs" -ge 1 ] || api_secs=1
gguf_secs=$((secs - st_secs - api_secs))
[ "$gguf_secs" -ge 1 ] || gguf_secs=1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${LS_FUZZ_BUILD:-$root/build-fuzz}"

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
CC=clang CXX=clang++ cmake -S "$root" -B "$build" "${generator[@]}" \
  -DLS_FUZZ=ON -DLS_ENABLE_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target fuzz_gguf fuzz_safetensors fuzz_api_request

# fuzz TARGET SEEDS DICT SECONDS WHAT: runs one fuzzer over a fresh copy of
# its seeds; returns its exit status.
fuzz() {
  local target="$1" seeds="$2" dict="$3" t="$4" what="$5"
  local corpus="$build/fuzz-corpus-$target" artifacts="$build/fuzz-artifacts-$target"
  rm -rf "$corpus"
  mkdir -p "$corpus" "$artifacts"
  cp "$seeds"/* "$corpus"/
  echo "fuzz.sh: fuzzing $what for ${t}s over $(ls "$corpus" | wc -l) seeds"
  # -timeout: one input taking 10 s is a bug (hang); -rss_limit_mb: the reader
  # must not allocate far beyond its input; leaks are reported (ASan default).
  ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}" \
  UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
    "$build/$target" -max_total_time="$t" -timeout=10 -rss_limit_mb=2048 \
    -max_len=8192 -dict="$dict" -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus"
}

# report TARGET RC SECONDS: says how a fuzzer ended; non-zero on a finding.
report() {
  local target="$1" rc="$2" t="$3"
  local corpus="$build/fuzz-corpus-$target" artifacts="$build/fuzz-artifacts-$target"
  if [ "$rc" -ne 0 ]; then
    echo "fuzz.sh: $target FAILED (exit $rc); reproducer(s) in $artifacts:" >&2
    ls -l "$artifacts" >&2
    echo "rerun one with: $build/$target $artifacts/<file>" >&2
    return 1
  fi
  echo "fuzz.sh: $target: no crash in ${t}s; corpus grew to $(ls "$corpus" | wc -l) inputs"
}

gguf=(fuzz_gguf "$root/tests/fuzz/corpus" "$root/tests/fuzz/gguf.dict" "$gguf_secs" "the GGUF reader")
st=(fuzz_safetensors "$root/tests/fuzz/corpus_safetensors" "$root/tests/fuzz/safetensors.dict"
    "$st_secs" "the safetensors header parser")
api=(fuzz_api_request "$root/tests/fuzz/corpus_api_request" "$root/tests/fuzz/api_request.dict"
     "$api_secs" "the server's request parser")
if [ "$(nproc)" -lt 2 ]; then
  rc=0; fuzz "${gguf[@]}" || rc=$?; report fuzz_gguf "$rc" "$gguf_secs" || exit 1
  rc=0; fuzz "${st[@]}" || rc=$?; report fuzz_safetensors "$rc" "$st_secs" || exit 1
  rc=0; fuzz "${api[@]}" || rc=$?; report fuzz_api_request "$rc" "$api_secs" || exit 1
  exit 0
fi
# Side by side: each fuzzer's output goes to its own log (libFuzzer prints a
# line per new input; two interleaved would be unreadable), shown once both
# are done.
fuzz "${gguf[@]}" > "$build/fuzz-fuzz_gguf.log" 2>&1 &
gguf_pid=$!
# The second core: the safetensors parser, then the request parser; each
# one's exit status in a file (a subshell's variables do not come back).
rm -f "$build/fuzz-fuzz_safetensors.rc" "$build/fuzz-fuzz_api_request.rc"
(
  rc=0; fuzz "${st[@]}" > "$build/fuzz-fuzz_safetensors.log" 2>&1 || rc=$?
  echo "$rc" > "$build/fuzz-fuzz_safetensors.rc"
  rc=0; fuzz "${api[@]}" > "$build/fuzz-fuzz_api_request.log" 2>&1 || rc=$?
  echo "$rc" > "$build/fuzz-fuzz_api_request.rc"
) &
st_pid=$!
gguf_rc=0; wait "$gguf_pid" || gguf_rc=$?
wait "$st_pid" || true
st_rc=$(cat "$build/fuzz-fuzz_safetensors.rc" 2> /dev/null || echo 1)
api_rc=$(cat "$build/fuzz-fuzz_api_request.rc" 2> /dev/null || echo 1)
cat "$build/fuzz-fuzz_gguf.log" "$build/fuzz-fuzz_safetensors.log" "$build/fuzz-fuzz_api_request.log"
failed=0
report fuzz_gguf "$gguf_rc" "$gguf_secs" || failed=1
report fuzz_safetensors "$st_rc" "$st_secs" || failed=1
report fuzz_api_request "$api_rc" "$api_secs" || failed=1
exit "$failed"
