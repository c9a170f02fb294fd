#!/bin/bash
# Session 46, call 6: is CUDA's prompt batch (n tokens at once) the same
# computation as its one-token decode steps? On the CPU it is, bit for bit
# (tiny Q8_0, f32 and q8: decode row 7 = the 8-token prompt's last row).
# Decode from "1" greedily; feed the first n-1 greedy ids as a prompt of n;
# compare the prompt's last row with the decode's row n-1, per backend, act,
# KV type and n (2, 4, 8, 16).
# Run: OUT=$OUT LIMIT=150 bash bench/results/raw-2026-12-06-s46/call6/run.sh $PWD  (carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-150}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
L=$B/layerstream
cmp_rows() {  # decode.bin row, prefill.bin row 0, label
  python3 - "$@" <<'PY'
import array, sys
d = array.array('f'); d.frombytes(open(sys.argv[1], 'rb').read())
p = array.array('f'); p.frombytes(open(sys.argv[3], 'rb').read())
r = int(sys.argv[2]); V = len(p) // 2
a, b = d[r * V:(r + 1) * V], p[:V]
m = max(abs(x) for x in a) or 1.0
print(f"{sys.argv[4]}: decode row {r} vs the prompt's last row: max|diff|/max|a| {max(abs(x - y) for x, y in zip(a, b)) / m:.3g}")
PY
}
{
for q in q8_0 q4_k; do
  timeout 30 $L synth -q -o $M/t-$q.gguf --preset tiny --quant $q > /dev/null 2>&1
  for be in cpu cuda; do for act in f32 q8; do for kv in f16 f32; do
    g=$(timeout 30 $L logits -m $M/t-$q.gguf --ids 1 --greedy 17 --greedy-logits /tmp/dec.bin --act $act --kv-type $kv --backend $be 2>>$O/err.txt)
    set -- $g
    for n in 2 4 8 16; do
      ids="1 ${*:1:$((n - 1))}"
      timeout 30 $L logits -m $M/t-$q.gguf --ids "$ids" --greedy 2 --greedy-logits /tmp/pre.bin --act $act --kv-type $kv --backend $be > /dev/null 2>>$O/err.txt
      cmp_rows /tmp/dec.bin $((n - 1)) /tmp/pre.bin "$q $be act $act kv $kv n $n"
    done
  done; done; done
done
} 2>&1 | tee $O/rows.txt; el
finish
