#!/usr/bin/env bash
# A bounded load on `layerstream serve` (tests/serve/load.mjs): 64
# concurrent streaming clients, 128 greedy requests of 24 tokens on the
# default model with --parallel 64, on loopback. Every stream must equal
# the same request alone, with no 5xx; TTFT and inter-token latency are
# printed (and written to BUILD_DIR/serve-test/load.json). Skipped without node.
# First, on the same server, scripts/serve_load.py (the GPU machine's
# throughput client, Python's standard library) with 4 clients: it must see
# every request end with its 96 tokens and a decode window with a rate.
# LS_SERVE_THREADS: the server's -t (default 1: on a 2-core CI machine shared
# with other tests, the CPU backend's spinning thread pool slows to a crawl).
#   tests/serve/test_load.sh LAYERSTREAM BUILD_DIR [CLIENTS REQUESTS MAX_TOKENS]
set -euo pipefail
bin=$(realpath "$1")
build=$(realpath "$2")
clients=${3:-64} requests=${4:-128} max_tokens=${5:-24}
here=$(cd "$(dirname "$0")" && pwd)
work="$build/serve-test"
mkdir -p "$work"
log="$work/server-load.log"
"$bin" serve --port 0 -t "${LS_SERVE_THREADS:-1}" --parallel 64 -c 256 --max-queue 256 > "$log" 2>&1 &
pid=$!
trap 'kill -9 $pid 2> /dev/null || true' EXIT
url=
for _ in $(seq 1 300); do
  url=$(grep -o 'http://127.0.0.1:[0-9]*' "$log" | head -n 1 || true)
  [ -n "$url" ] && curl -sf "$url/health" > /dev/null 2>&1 && break
  kill -0 $pid 2> /dev/null || { cat "$log"; exit 1; }
  sleep 0.05
done
python3 "$here/../../scripts/serve_load.py" "$url" 4 8 96 4096 "$work/serve_load_py.json" > /dev/null
python3 - "$work/serve_load_py.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["completed"] == 4 and r["tokens"] == 4 * 96, r
assert r["decode_tok_s"] > 0 and r["window_samples"] >= 2, r
print(f"PASS: serve_load.py: 4 clients, 4 x 96 tokens, {r['decode_tok_s']:.1f} tok/s decoding")
PY
status=0
if command -v node > /dev/null; then
  node "$here/load.mjs" "$url" "$clients" "$requests" "$max_tokens" "$work/load.json"
else
  echo "SKIPPED: the load test (load.mjs): node is not installed"
  status=77
fi
kill -TERM $pid
wait $pid
exit $status
