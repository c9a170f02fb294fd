#!/bin/bash
# Session 46, call 2: issue 18's replay on another host (three rounds), and
# where a resident 8b decode step's time goes now (issue 20): bench's ratio
# to the device-memory bound, ncu of one step's kernels (each alone), and
# the decode attention's kernels after a 16,000-token prompt.
# Run: OUT=$OUT LIMIT=560 bash bench/results/raw-2026-12-06-s46/call2/run.sh $PWD  (carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-560}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
E=$M/8b.gguf
timeout 90 $B/layerstream synth -q -o $E --preset 8b --quant q4_k_m > $O/synth-8b.txt 2>&1; echo "synth 8b rc=$?"; el
for i in 1 2; do
  timeout 60 $B/layerstream bench -m $E -n 128 > $O/bench-8b-$i.txt 2>&1; echo "8b bench $i rc=$?"
  grep -E "device memory bound|^\| [0-9]" $O/bench-8b-$i.txt | cut -c1-200
done; el; pack
synth_70b_bg   # beside ncu (kernel times alone), not beside the benches
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1); echo "ncu: $NCU"
wait $SYN; echo "synth 70b rc=$?"; el
timeout 150 $NCU --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv \
  --log-file $O/ncu-8b.csv $B/layerstream decode -m $E -p Hello -n 3 --temp 0 > /dev/null 2>&1
echo "ncu 8b rc=$?"; python3 $R/scripts/ncu_step_summary.py $O/ncu-8b.csv 2>&1 | head -24 | cut -c1-160; xz -T4 $O/ncu-8b.csv; el; pack
spec_rounds 3
if left 100; then
  timeout 90 $NCU --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv \
    -k regex:attention_decode --launch-count 64 --log-file $O/ncu-8b-16k.csv \
    $B/layerstream bench -m $E --prompt-tokens 16000 -n 2 -c 16384 > $O/ncu-8b-16k.txt 2>&1
  echo "ncu 8b 16k rc=$?"
  python3 - $O/ncu-8b-16k.csv <<'PY' 2>&1 | head -8
import csv, sys, collections
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
c = {h: i for i, h in enumerate(rows[0])}; agg = collections.defaultdict(lambda: [0, 0.0, 0.0])
for r in rows[1:]:
    k = (r[c["Kernel Name"]][:50], r[c["Grid Size"]], r[c["Block Size"]]); v = float(r[c["Metric Value"]].replace(",", ""))
    if r[c["Metric Name"]] == "gpu__time_duration.sum": agg[k][0] += 1; agg[k][1] += v * (1e-3 if r[c["Metric Unit"]] in ("ns", "nsecond") else 1)
    else: agg[k][2] += v * {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}.get(r[c["Metric Unit"]], 1) / 1e6
for k, (n, us, mb) in agg.items(): print(f"{n:4d} {us/n:8.1f} us each {mb/n:8.1f} MB each {mb/us*1e3 if us else 0:6.0f} GB/s  {k}")
PY
  el; pack
fi
finish
