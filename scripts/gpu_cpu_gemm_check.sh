#!/usr/bin/env bash
# gpu_cpu_gemm_check.sh: the CPU q8 GEMM and the lane-form dot kernels
# (kernels/cpu/gemm_q8*, dot_q8*) on the GPU machine's Xeon, the only machine
# we have with real AVX-512 VNNI (the dev VM ran those kernels under SIMDe
# only: bench/results/raw-2026-12-02-gemm/avx512-emulated/). In order of
# importance, stopping at a deadline (4 minutes in all on 16 cores):
#
#   1. unit tests of the q8 kernels and the batched pipeline, whose AVX-512
#      cases skip on the dev VM: a token's bits alone = in any batch, on every
#      variant (fails if the AVX-512 cases were skipped here too)
#   2. decode at width 1 (the dot), this build against the base build, A B A B
#      back to back: the lane-form rewrite must not make batch-1 decode slower
#      (the host read rate moves by ~10 % minutes apart on this VM, so the
#      base runs in the same call; the 2026-11-30 figures are printed too:
#      bench/results/2026-11-30-h200-cpu-q8.md, the same command)
#   3. prefill of 512 tokens, 1b Q4_K_M, CPU only, this build and the base A B
#      A B (the GEMM is what makes prefill faster)
#   4. dot and GEMM at 1, 4, 8, 32 tokens, 70b shapes, all threads (the
#      crossover: the engine takes the GEMM from gemm_q8_min_tokens = 8 on
#      AVX-512), and the base's dot at the same widths
#
# Usage (from the repository root):
#   scripts/gpu_cpu_gemm_check.sh [BIN]      BIN: default build
# BIN holds ls_unit_tests, ls_bench_cpu_matmul, layerstream; BIN/base holds
# the base build's ls_bench_cpu_matmul and layerstream (steps 2-4 compare
# against it; without it they run this build alone). Logs and JSON go to
# $OUT (default /tmp/gpu_cpu_gemm_check), a summary at the end of stdout.
# Exit status: 0 when the unit tests passed with AVX-512 exercised and every
# step ran; the speed comparisons are reported, not judged.
# Knobs for a dry run elsewhere: LS_CHECK_ISA (avx512), LS_CHECK_PROMPT (512),
# LS_CHECK_SHAPES (70b), LS_CHECK_BUDGET_S (230).
set -u -o pipefail

bin=$(cd "${1:-build}" && pwd) || { echo "no binaries directory ${1:-build}" >&2; exit 2; }
base="$bin/base"
out=${OUT:-/tmp/gpu_cpu_gemm_check}
mkdir -p "$out"
out=$(cd "$out" && pwd)
isa=${LS_CHECK_ISA:-avx512}
prompt=${LS_CHECK_PROMPT:-512}
shapes=${LS_CHECK_SHAPES:-70b}
budget=${LS_CHECK_BUDGET_S:-230}
t0=$(date +%s)
status=0

for f in ls_unit_tests ls_bench_cpu_matmul layerstream; do
  [ -x "$bin/$f" ] || { echo "missing $bin/$f" >&2; exit 2; }
done
have_base=0
[ -x "$base/ls_bench_cpu_matmul" ] && [ -x "$base/layerstream" ] && have_base=1

# Thread counts: those of the 2026-11-30 runs this machine has, and all cores.
cores=$(nproc)
threads=""
for t in 1 4 8 15 16; do [ "$t" -le "$cores" ] && threads="$threads${threads:+,}$t"; done
[ "$cores" -lt 16 ] && threads="$threads,$cores"
top=$((cores < 16 ? cores : 16))

# Scratch: the tests' tiny models, the 1b model (page cache or /dev/shm, not $OUT).
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ls_gemm_check.XXXXXX")
model_dir=$scratch
shm_free=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 {print $4}')
[ -n "$shm_free" ] && [ "$shm_free" -gt $((3 << 20)) ] && model_dir=$(mktemp -d /dev/shm/ls_gemm_check.XXXXXX)
trap 'rm -rf "$scratch"; [ "$model_dir" != "$scratch" ] && rm -rf "$model_dir"' EXIT

log() { echo "[$(($(date +%s) - t0)) s] $*"; }
# step NAME CAP_S CMD...: runs CMD (stdout and stderr to $out/NAME.txt) under
# the smaller of CAP_S and what is left of the budget; skipped when under 5 s
# are left. Returns CMD's status (124: timed out, 125: skipped).
step() {
  local name=$1 cap=$2
  shift 2
  local left=$((budget - ($(date +%s) - t0)))
  [ "$left" -lt "$cap" ] && cap=$left
  if [ "$cap" -lt 5 ]; then
    log "$name: SKIPPED (budget of $budget s spent)"
    echo "skipped: budget spent" >"$out/$name.txt"
    status=1
    return 125
  fi
  local s rc=0
  s=$(date +%s)
  timeout "$cap" "$@" >"$out/$name.txt" 2>&1 || rc=$?
  log "$name: rc=$rc in $(($(date +%s) - s)) s (cap $cap s)"
  [ "$rc" -eq 124 ] && status=1
  return "$rc"
}

{
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "host: $(hostname)  cores: $cores  load: $(cut -d' ' -f1-3 /proc/loadavg)"
  grep -m1 'model name' /proc/cpuinfo
  echo "avx512 flags: $(grep -m1 -o -w -E 'avx512f|avx512bw|avx512vl|avx512_vnni' /proc/cpuinfo | sort -u | tr '\n' ' ')"
  echo "thp: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
  echo "model dir: $model_dir  threads: $threads  isa: $isa  shapes: $shapes  prompt: $prompt"
  (cd "$bin" && sha256sum ls_unit_tests ls_bench_cpu_matmul layerstream)
  [ "$have_base" = 1 ] && (cd "$base" && sha256sum ls_bench_cpu_matmul layerstream | sed 's|  |  base/|')
} | tee "$out/machine.txt"
[ "$have_base" = 1 ] || log "no $base: steps 2-4 run this build alone"

# ---- 1. Unit tests ----------------------------------------------------------------
# From the scratch directory: the pipeline tests write their tiny models in
# the working directory. LS_CPU_ISA unset: the tests pick every variant.
(
  cd "$scratch" || exit 2
  unset LS_CPU_ISA
  step unit 90 "$bin/ls_unit_tests" -tc="cpu_gemm_q8*,cpu_matmul*,pipeline batch*,*q8*"
)
unit_rc=$?
grep -E '^\[doctest\] (test cases|assertions)' "$out/unit.txt"
if [ "$unit_rc" -ne 0 ]; then
  log "unit: FAILED (rc $unit_rc)"
  status=1
fi
if grep -q 'SKIPPED: avx512' "$out/unit.txt"; then
  log "unit: the AVX-512 cases were SKIPPED: $(grep -m1 'SKIPPED: avx512' "$out/unit.txt")"
  status=1
fi

# ---- 2-4. Benchmarks ---------------------------------------------------------------
# Width 1 as in 2026-11-30 (q8 only; the f32 path is not touched on AVX-512).
# shellcheck disable=SC2054  # commas: the benches' lists
w1=(--isa "$isa" --types q4_k,q6_k --threads "$threads" --ntok 1 --shapes "$shapes" --act q8
    --reps 3)
width1() {  # round
  if [ "$have_base" = 1 ]; then
    step "w1-base-$1" 40 "$base/ls_bench_cpu_matmul" "${w1[@]}" --json "$out/w1-base-$1.json"
  fi
  step "w1-new-$1" 40 "$bin/ls_bench_cpu_matmul" "${w1[@]}" --path dot --json "$out/w1-new-$1.json"
}
model="$model_dir/1b-q4_k_m.gguf"
prefill() {  # round: this build, then the base
  [ -f "$model" ] || return 0
  local p=(-m "$model" --backend cpu -t "$top" --prompt-tokens "$prompt" -n 16)
  LS_CPU_ISA=$isa step "prefill-new-$1" 45 "$bin/layerstream" bench "${p[@]}" \
    --json "$out/prefill-new-$1.json"
  if [ "$have_base" = 1 ]; then
    LS_CPU_ISA=$isa step "prefill-base-$1" 45 "$base/layerstream" bench "${p[@]}" \
      --json "$out/prefill-base-$1.json"
  fi
}
# shellcheck disable=SC2054
widths=(--isa "$isa" --types q4_k,q6_k --threads "$top" --ntok 1,4,8,32 --shapes "$shapes"
        --act q8 --reps 5)

width1 1
step synth 40 "$bin/layerstream" synth -q -o "$model" --preset 1b --quant q4_k_m -t "$top" ||
  rm -f "$model"
prefill 1
step widths-new 45 "$bin/ls_bench_cpu_matmul" "${widths[@]}" --path dot,gemm \
  --json "$out/widths-new.json"
width1 2
prefill 2
[ "$have_base" = 1 ] &&
  step widths-base 35 "$base/ls_bench_cpu_matmul" "${widths[@]}" --json "$out/widths-base.json"

# ---- Summary -----------------------------------------------------------------------
summarize() {
  python3 - "$out" <<'EOF'
import json, math, os, sys
out = sys.argv[1]
def load(name):
    p = os.path.join(out, name)
    try:
        with open(p) as f:
            return json.load(f)
    except (OSError, ValueError):
        print(f"({name}: none: the step failed, timed out or was skipped; see {name[:-5]}.txt)")
        return None
def gmean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")
def key(r):
    return (r["type"], r["n_in"], r["n_out"], r["threads"], r["n_tok"], r.get("path", "dot"))

# 2026-11-30 (bench/results/2026-11-30-h200-cpu-q8.md), q8, n_tok 1, GB/s.
old = {("q4_K", 8192, 8192): [11.1, 38.8, 65.3, 103.4, 115.6],
       ("q4_K", 8192, 28672): [10.6, 37.6, 63.5, 98.5, 97.4],
       ("q4_K", 28672, 8192): [10.0, 30.8, 52.7, 83.0, 93.8],
       ("q4_K", 8192, 1024): [7.9, 32.4, 55.7, 92.0, 96.6],
       ("q6_K", 8192, 8192): [9.0, 35.7, 73.5, 106.3, 129.6],
       ("q6_K", 8192, 28672): [10.2, 41.6, 76.5, 100.3, 124.0],
       ("q6_K", 28672, 8192): [9.4, 34.3, 61.5, 99.9, 103.1]}
old_thr = [1, 4, 8, 15, 16]

print("\n== width 1 (decode), GB/s of weights, median of 3: new dot / base, per round")
print("(11-30: the same command on 2026-11-30, then with 16 row chunks per thread; the base")
print(" column is the fair one: same call, same defaults)")
rounds = []
for rnd in (1, 2):
    n, b = load(f"w1-new-{rnd}.json"), load(f"w1-base-{rnd}.json")
    if n:
        rounds.append((rnd, {key(r): r for r in n["rows"]}, {key(r): r for r in b["rows"]} if b else {}))
if rounds:
    print(f"{'type':5} {'shape':12} {'thr':>3} " +
          " ".join(f"{'new' + str(r):>7} {'base' + str(r):>7} {'ratio':>6}" for r, _, _ in rounds) +
          f" {'11-30':>7}")
    ratios = {}
    for k in sorted(rounds[0][1]):
        t, ni, no, th, _, _ = k
        cells = []
        for rnd, nr, br in rounds:
            nv = nr.get(k, {}).get("gbps_median")
            bv = br.get(k, {}).get("gbps_median")
            ratio = nv / bv if nv and bv else None
            if ratio:
                ratios.setdefault((rnd, th), []).append(ratio)
            cells.append(f"{nv or 0:7.1f} {bv or 0:7.1f} " + (f"{ratio:6.2f}" if ratio else f"{'-':>6}"))
        o = old.get((t, ni, no))
        ov = o[old_thr.index(th)] if o and th in old_thr else None
        print(f"{t:5} {str(ni) + 'x' + str(no):12} {th:3} " + " ".join(cells) +
              (f" {ov:7.1f}" if ov else f" {'-':>7}"))
    for (rnd, th), rs in sorted(ratios.items()):
        g = gmean(rs)
        flag = "  <-- SLOWER than base" if g < 0.95 else ""
        print(f"round {rnd}, {th:2} threads: new/base geometric mean {g:.3f} over {len(rs)} shapes{flag}")

print("\n== prefill, 1b Q4_K_M, CPU only: prompt tok/s, then decode tok/s")
for rnd in (1, 2):
    for who in ("new", "base"):
        j = load(f"prefill-{who}-{rnd}.json")
        if j and j.get("rows"):
            r = j["rows"][0]
            err = f"  error: {r['error']}" if r.get("error") else ""
            print(f"round {rnd} {who:4}: prefill {r['prefill_tok_s']:8.1f} tok/s ({r['prompt_tokens']}"
                  f" tokens), decode {r['tok_s']:7.2f} tok/s{err}")

print("\n== widths, all threads, GFLOP/s (GB/s): dot and GEMM (new), dot (base)")
n, b = load("widths-new.json"), load("widths-base.json")
if n:
    nr = {key(r): r for r in n["rows"]}
    br = {key(r)[:5]: r for r in b["rows"]} if b else {}
    for k in sorted({k[:5] for k in nr}):
        def cell(r):
            return f"{r['gflops_median']:8.1f} ({r['gbps_median']:6.1f})" if r else f"{'-':>17}"
        d, g, bd = nr.get(k + ("dot",)), nr.get(k + ("gemm",)), br.get(k)
        t, ni, no, th, nt = k
        print(f"{t:5} {str(ni) + 'x' + str(no):12} thr {th:2} ntok {nt:3}: dot {cell(d)}"
              f"  gemm {cell(g)}  base dot {cell(bd)}")
EOF
}
if command -v python3 >/dev/null 2>&1; then
  summarize | tee "$out/summary.txt"
else
  log "no python3: no summary (the tables are in $out/*.txt)"
fi
log "done, status $status (logs in $out)"
exit "$status"
