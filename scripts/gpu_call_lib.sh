# Sourced by a GPU-machine call's script (bench/results/raw-*/*/run.sh): what
# every call does the same way. Set R (the repository root on the device), O
# (the output folder, under OUT) and LIMIT (seconds) first.
#   el             a time stamp with the seconds since the start
#   left N         whether N seconds of LIMIT are left
#   pack           the output so far into $OUT/out.tgz (a call cut short keeps it)
#   finish         the output packed, the folder removed, $OUT listed
#   unpack_bins    .gpubin/bin.txz (scripts/gpu_pack.sh) into $B
#   synth_70b_bg   the tied synthetic 70b Q4_K_M into $F unless there, in the
#                  background ($SYN its pid; `wait $SYN` before timing anything)
#   spec_rounds M  issue 18's replay at 0.7 (plain, K = 7, K chosen), as many
#                  rounds (80 s each, at most M) as the time left holds
#   rate FILE      a `layerstream bench` output's last row: tok/s, storage
#                  GB/s and the ratio to its bound
#   ncu_step MODEL  ncu of one decode step of MODEL, each kernel alone
#                  (scripts/ncu_step_summary.py's table printed; the log
#                  kept as $O/ncu-step.csv.xz), if 70 s are left
#   ab_runs TAG N ARGS...  `layerstream bench ARGS` under each setting of $AB
#                  (settings separated by ';', each env assignments, e.g.
#                  AB="LS_X=1;LS_GEMV_EARLY=1"), alternated, N rounds; each
#                  run's output in $O/TAG-SETTING-ROUND.txt, its rate printed
B=${B:-/tmp/b}; M=${M:-/tmp/ls-models}; F=${F:-$M/70b-q4km-tied.gguf}
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
rate() { grep -E "^\| [0-9]" "$1" | tail -1 | awk -F'|' '{print $2, $3, $(NF-3)}'; }
left() { [ $((LIMIT - SECONDS)) -ge "$1" ]; }
pack() { (cd "$OUT" && tar -czf out.tgz r); }
finish() { (cd "$OUT" && tar -czf out.tgz r && rm -rf r); ls -la "$OUT"; }
unpack_bins() {
  mkdir -p "$B" "$M" "$O"
  tar -xJf "$R/.gpubin/bin.txz" -C "$B" || exit 2
  nvidia-smi --query-gpu=name --format=csv,noheader
  el
}
synth_70b_bg() {
  ( [ -f "$F" ] || timeout 220 "$B/layerstream" synth -q -o "$F" --preset 70b --quant q4_k_m --tied ) \
    > "$O/synth.txt" 2>&1 &
  SYN=$!
}
spec_rounds() {
  local n=$(( (LIMIT - SECONDS - 15) / 80 )); [ $n -gt "$1" ] && n=$1
  [ $n -ge 1 ] || return 0
  (cd "$R" && BIN=$B OUT=/tmp/spec MODELS=$M N=128 KS=" " ALPHA_KS="7 0" ROUNDS=$n \
    timeout $((LIMIT - SECONDS - 5)) bash scripts/gpu_speculative_check.sh > "$O/spec.txt" 2>&1)
  echo "spec ($n rounds) rc=$?"; grep -E "^plain|^a0|ratio|median" "$O/spec.txt" | cut -c1-120
  grep -o "ids = plain\|differ$" "$O/spec.txt" | sort | uniq -c; el
  for f in /tmp/spec/*.err; do cp "$f" "$O/spec-$(basename "$f")" 2>/dev/null; done
}
ab_runs() {
  local tag=$1 rounds=$2 r e n f
  shift 2
  local settings
  IFS=';' read -ra settings <<< "$AB"
  for r in $(seq "$rounds"); do
    for e in "${settings[@]}"; do
      n=$(echo "$e" | tr ' =' '__'); f=$O/$tag-$n-$r.txt
      env $e timeout 60 "$B/layerstream" bench "$@" > "$f" 2>&1
      echo "$tag round $r, $e: $(rate "$f")"
    done
  done
}
ncu_step() {
  local ncu
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
  left 70 && [ -n "$ncu" ] || return 0
  timeout $((LIMIT - SECONDS - 10)) "$ncu" --clock-control none \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv --log-file "$O/ncu-step.csv" \
    "$B/layerstream" decode -m "$1" -p Hello -n 3 --temp 0 > /dev/null 2>&1
  echo "ncu step rc=$?"
  python3 "$R/scripts/ncu_step_summary.py" "$O/ncu-step.csv" 2>&1 | head -14 | cut -c1-150
  xz -T4 "$O/ncu-step.csv"; el
}
