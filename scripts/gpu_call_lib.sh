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
B=${B:-/tmp/b}; M=${M:-/tmp/ls-models}; F=${F:-$M/70b-q4km-tied.gguf}
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
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
