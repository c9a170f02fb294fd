#!/usr/bin/env bash
# Build and run the unit tests under a sanitizer (the CI sanitizer step).
# Usage: scripts/sanitize.sh asan|tsan [doctest args...]
#   asan: AddressSanitizer + UBSan (CMAKE_BUILD_TYPE=Sanitize) in build-asan, with clang
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
compiler=()
case "$mode" in
  asan)
    build=build-asan
    type=Sanitize
    # clang (installed for the fuzzers): it compiles this build in about 720 s
    # of CPU where gcc took about 1,100 (2026-12-07, 2 cores), most of it in
    # the tests' own files (185 against 438 s); CI builds it from scratch.
    # gcc where clang is missing. A build directory configured with the other
    # compiler is reconfigured from scratch (CMake says so).
    if command -v clang++ >/dev/null 2>&1; then
      compiler=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)
    else
      echo "sanitize.sh: clang++ not found: building with the default compiler (slower)"
    fi
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
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DLS_ENABLE_CUDA=OFF \
  "${compiler[@]}" "${launcher[@]}"
# layerstream too: the unit tests run the CLI (LS_BINARY), under the sanitizer.
cmake --build "$build" -j "$jobs" --target ls_unit_tests layerstream
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
tests="$root/$build/ls_unit_tests"
start=$(date +%s)
status=0
# The whole suite on a machine of 2 or more cores: the cases in one shuffled
# order (doctest's --order-by=rand with a fixed seed), cut into SHARDS pieces
# (--first/--last), each a process in its own directory, run by as many
# workers as cores: a worker that ends a piece takes the next. Two halves
# (sessions 48-50) ended apart: 280 and 415 s of cases on a fresh clone
# (2026-12-07), the run's wall time the longer; pieces of about a minute end
# within about one of each other. Each piece's doctest summary counts every
# case as passed; its own cases are those with a time line ('--duration').
# SHARDS=1, or any doctest arguments, runs one process; LS_SHARD_SEED picks
# another order (and so other pieces).
shards=${SHARDS:-12}
if [ "$#" -gt 0 ] || [ "$jobs" -lt 2 ] || [ "$shards" -lt 2 ]; then
  mkdir -p "$scratch/all" && cd "$scratch/all"
  "$tests" "$@" || status=$?
  echo "sanitize.sh $mode: ls_unit_tests exit $status in $(($(date +%s) - start)) s"
  exit "$status"
fi
seed=${LS_SHARD_SEED:-48}
n=$("$tests" --count | sed -n 's/.*passing the current filters: \([0-9]*\).*/\1/p')
[ -n "$n" ] || { echo "sanitize.sh: could not count the test cases" >&2; exit 1; }
[ "$shards" -le "$n" ] || shards=$n
# run_piece K: cases K·n/shards + 1 .. (K + 1)·n/shards of the order; its
# output in piece-K.log, its exit status in piece-K.rc.
run_piece() {
  local k=$1 first=$(($1 * n / shards + 1)) last=$((($1 + 1) * n / shards))
  mkdir -p "$scratch/$k" && cd "$scratch/$k"
  local rc=0
  "$tests" --order-by=rand --rand-seed="$seed" --first="$first" --last="$last" --duration=true \
    > "$scratch/piece-$k.log" 2>&1 || rc=$?
  echo "$rc" > "$scratch/piece-$k.rc"
}
# Workers: each takes the next piece number from a counter under a lock.
echo 0 > "$scratch/next"
worker() {
  local k
  while true; do
    k=$(flock "$scratch/next" bash -c 'k=$(cat "$1"); echo $((k + 1)) > "$1"; echo "$k"' _ "$scratch/next")
    [ "$k" -lt "$shards" ] || return 0
    run_piece "$k"
  done
}
pids=()
for _ in $(seq "$jobs"); do worker & pids+=($!); done
for p in "${pids[@]}"; do wait "$p"; done
failed=()
total=0
for k in $(seq 0 $((shards - 1))); do
  ran=$(grep -cE '^[0-9]+\.[0-9]+ s: ' "$scratch/piece-$k.log" || true)
  total=$((total + ran))
  rc=$(cat "$scratch/piece-$k.rc" 2>/dev/null || echo "none")
  echo "=== sanitize.sh $mode: piece $((k + 1)) of $shards, $ran cases, exit $rc (shuffled with seed $seed)"
  cat "$scratch/piece-$k.log"
  [ "$rc" = 0 ] || failed+=("$((k + 1))")
done
[ "$total" -eq "$n" ] || { echo "sanitize.sh: the pieces ran $total of $n cases" >&2; status=1; }
[ "${#failed[@]}" -eq 0 ] || status=1
echo "sanitize.sh $mode: ls_unit_tests, $n cases in $shards pieces on $jobs workers:" \
  "${#failed[@]} failed${failed:+ (pieces ${failed[*]})}, in $(($(date +%s) - start)) s"
exit "$status"
