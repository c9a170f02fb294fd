#!/usr/bin/env bash
# Build and run the unit tests under a sanitizer (the CI sanitizer step).
# Usage: scripts/sanitize.sh asan|tsan [doctest args...]
#   asan: AddressSanitizer + UBSan (CMAKE_BUILD_TYPE=Sanitize) in build-asan
#   tsan: ThreadSanitizer (CMAKE_BUILD_TYPE=Tsan) in build-tsan
# Extra arguments go to ls_unit_tests, e.g. -tc="pipeline*" for a quick run.
# Environment: JOBS (build parallelism, default nproc); SHARDS=1 (one test
# process, not two) and LS_SHARD_SEED (another split): see below.
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
tests="$root/$build/ls_unit_tests"
start=$(date +%s)
status=0
# The whole suite on a machine of 2 or more cores: two processes, each half of
# the cases in one shuffled order (doctest's --order-by=rand with a fixed seed,
# then --first/--last), each in its own directory. One process kept 1.4 of
# CI's 2 cores busy: 377 s alone, 286 s as two halves (session 48). Each
# half's doctest summary counts every case as passed; its own cases are those
# with a time line ('--duration'). SHARDS=1, or any doctest arguments, runs
# one process; LS_SHARD_SEED picks another split (and order).
shards=${SHARDS:-2}
if [ "$#" -gt 0 ] || [ "$jobs" -lt 2 ] || [ "$shards" -lt 2 ]; then
  mkdir -p "$scratch/all" && cd "$scratch/all"
  "$tests" "$@" || status=$?
  echo "sanitize.sh $mode: ls_unit_tests exit $status in $(($(date +%s) - start)) s"
  exit "$status"
fi
seed=${LS_SHARD_SEED:-48}
n=$("$tests" --count | sed -n 's/.*passing the current filters: \([0-9]*\).*/\1/p')
[ -n "$n" ] || { echo "sanitize.sh: could not count the test cases" >&2; exit 1; }
half=$(((n + 1) / 2))
run_half() {  # run_half NAME FIRST [LAST]
  mkdir -p "$scratch/$1" && cd "$scratch/$1"
  local range=(--first="$2")
  [ -z "${3:-}" ] || range+=(--last="$3")
  "$tests" --order-by=rand --rand-seed="$seed" "${range[@]}" --duration=true \
    > "$scratch/$1.log" 2>&1
}
run_half a 1 "$half" & pa=$!
run_half b $((half + 1)) & pb=$!
sa=0; sb=0
wait "$pa" || sa=$?
wait "$pb" || sb=$?
for h in a b; do
  ran=$(grep -cE '^[0-9]+\.[0-9]+ s: ' "$scratch/$h.log" || true)
  echo "=== sanitize.sh $mode: half $h, $ran of $n cases (shuffled with seed $seed)"
  cat "$scratch/$h.log"
done
[ "$sa" -eq 0 ] && [ "$sb" -eq 0 ] || status=1
echo "sanitize.sh $mode: ls_unit_tests in two halves of $n cases: exit $sa and $sb in $(($(date +%s) - start)) s"
exit "$status"
