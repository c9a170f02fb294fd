#!/usr/bin/env bash
# Build and run the unit tests under a sanitizer (the CI sanitizer step).
# Usage: scripts/sanitize.sh asan|tsan [doctest args...]
#   asan: AddressSanitizer + UBSan (CMAKE_BUILD_TYPE=Sanitize) in build-asan
#   tsan: ThreadSanitizer (CMAKE_BUILD_TYPE=Tsan) in build-tsan
# Extra arguments go to ls_unit_tests, e.g. -tc="pipeline*" for a quick run.
# Environment: JOBS (build parallelism, default nproc).
# The tests run in a scratch directory (they write models under their cwd).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
mode=${1:-}
shift || true
case "$mode" in
  asan)
    build=build-asan
    type=Sanitize
    # UBSan must fail the run, not just print.
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    ;;
  tsan)
    build=build-tsan
    type=Tsan
    # halt_on_error: a race fails the run (exit 66) instead of scrolling by.
    # No suppressions: moodycamel's queues use atomic_thread_fence, which TSan
    # does not model (gcc says so with -Wtsan), but no report came from them.
    export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
    ;;
  *)
    echo "usage: scripts/sanitize.sh asan|tsan [doctest args...]" >&2
    exit 2
    ;;
esac
jobs=${JOBS:-$(nproc)}
# ccache when the machine has it: unchanged files are cache hits on the next run.
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
            -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DLS_ENABLE_CUDA=OFF "${launcher[@]}"
# layerstream too: the unit tests run the CLI (LS_BINARY), under the sanitizer.
cmake --build "$build" -j "$jobs" --target ls_unit_tests layerstream
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
start=$(date +%s)
status=0
"$root/$build/ls_unit_tests" "$@" || status=$?
echo "sanitize.sh $mode: ls_unit_tests exit $status in $(($(date +%s) - start)) s"
exit "$status"
