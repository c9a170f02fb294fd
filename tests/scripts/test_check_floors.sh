#!/usr/bin/env bash
# scripts/check_floors.py can fail: on a copy of the source folders it passes,
# then each planted wrong include makes it exit 1 naming the file, the line and
# the rule; removing the plant makes it pass again. A ctest (check_floors_planted).
# Usage: tests/scripts/test_check_floors.sh [source-dir]
set -euo pipefail
root=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
check="$root/scripts/check_floors.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for d in runtime io kernels model actors tools; do cp -r "$root/$d" "$tmp/"; done
mkdir -p "$tmp/tests/bench"
failures=0

expect_pass() {  # what
  if ! out=$(python3 "$check" --root "$tmp" 2>&1); then
    echo "FAIL: $1: check_floors failed on a clean tree:"; echo "$out"; failures=$((failures + 1))
  else
    echo "ok: $1: $out"
  fi
}

# expect_fail FILE LINE INCLUDE MESSAGE-PART: plant FILE whose line LINE is
# `#include "INCLUDE"`, run the check, want exit 1 and "FILE:LINE: ... MESSAGE-PART".
expect_fail() {
  local file=$1 line=$2 inc=$3 want=$4 status=0 out
  mkdir -p "$(dirname "$tmp/$file")"
  { for ((i = 1; i < line; i++)); do echo "// planted by test_check_floors.sh"; done
    echo "#include \"$inc\""; } >"$tmp/$file"
  out=$(python3 "$check" --root "$tmp" 2>&1) || status=$?
  rm -f "$tmp/$file"
  local wanted="$file:$line: #include \"$inc\": $want"
  if [ "$status" -ne 1 ]; then
    echo "FAIL: $file including $inc: exit $status, want 1:"; echo "$out"; failures=$((failures + 1))
  elif ! grep -qF "$wanted" <<<"$out"; then
    echo "FAIL: $file including $inc: no line '$wanted' in:"; echo "$out"; failures=$((failures + 1))
  else
    echo "ok: $file including $inc fails: $(grep -F "$file:$line:" <<<"$out")"
  fi
}

expect_pass "the tree as it is"
# An upward include into the ground floor (the one the issue names).
expect_fail runtime/planted.h 3 actors/compute.h "actors is above runtime"
# io/ under kernels/: the type table moved down so that this is never needed.
expect_fail io/planted.cpp 1 kernels/half.h "kernels is above io"
# The same, spelled relative to the including file.
expect_fail io/nvme/planted.h 2 ../../model/model.h "model is above io"
# An actor including the engine that wires it (the engine is above the actors).
expect_fail actors/planted.cpp 5 actors/pipeline.h "engine is above actors"
# A floor below, but one the row does not allow: kernels use only status,
# CUDA errors and the thread pool of runtime/.
expect_fail kernels/cpu/planted.h 4 runtime/trace.h "kernels may not use runtime/trace.h"
expect_fail kernels/planted.cu 1 io/gguf.h "kernels may not use io/gguf.h"
# The forwarder kept for tests/bench/ only.
expect_fail model/planted.h 1 kernels/ggml_type.h "kernels/ggml_type.h may be included only from"
# What is allowed stays allowed: tools use the engine, tests use anything, the
# engine uses the actors, and tests/bench the forwarder.
for ok in tools/planted.cpp:actors/engine.h tests/planted.cpp:tools/commands.h \
          tests/bench/planted.cpp:kernels/ggml_type.h actors/engine.cpp:actors/compute.h; do
  f=${ok%%:*}; echo "#include \"${ok#*:}\"" >>"$tmp/$f"
  expect_pass "$f including ${ok#*:}"
  if [ -f "$root/$f" ]; then cp "$root/$f" "$tmp/$f"; else rm -f "$tmp/$f"; fi
done
# The plants gone, the tree passes again (nothing leaked between cases).
expect_pass "after the plants"

if [ "$failures" -ne 0 ]; then
  echo "test_check_floors: $failures case(s) failed"
  exit 1
fi
echo "test_check_floors: every case passed"
