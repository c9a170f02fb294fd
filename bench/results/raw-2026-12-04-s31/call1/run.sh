#!/bin/bash
# Session 31 had no device (none was lent); prepared for the next session.
# Call 1: (1) session 30's call 13, the CPU attention bench with its fill
# pools gone before anything is timed (issue 14's last line: 1k at >= 0.70
# of the host bound), four rounds, LS_POOL_SPIN_US=1000 in alternate ones,
# then the timeline's count of calls where all 16 threads took a block;
# (2) the hybrid plan's depth (session 31: hybrid_depth, 16 past the
# longest run of resident layers, 57 on the 70b at 24 GiB) against the old
# 16: synthetic 70b Q4_K_M at 24 GiB, bench --batch 1,8,32, 128-token
# prompts, alternated. Expected from the routing's simulation: width 8
# +5 %, width 32 +5.5 %, width 1 +2 %.
# Run: OUT=$OUT bash bench/results/raw-2026-12-04-s31/call1/run.sh $PWD
# (carry .gpubin/bin.txz: layerstream, ls_bench_cpu_attention).
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd /tmp
f() { grep -E "^ +[0-9]+ +[0-9]+ " $1 | awk '{print $1, $2, $7, $10 " us", $13 " GB/s", "host", $14, "ratio", $15}'; }
for r in 1 2 3 4; do
  S=""; [ $((r % 2)) = 0 ] && S=1000
  LS_POOL_SPIN_US=$S timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,16384 --reps 41 > $O/attn-$r.txt 2>&1
  echo "attention round $r LS_POOL_SPIN_US=$S rc=$?"; f $O/attn-$r.txt
done; el
timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048 --reps 201 --timeline > $O/tl.txt 2>&1
echo "timeline rc=$?"; grep -E "timeline|calls where" $O/tl.txt | cut -c1-230; el
F=$M/70b.gguf
timeout 120 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m; echo "synth rc=$?"; el
for d in 0 16 0 16; do
  timeout 150 $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB --depth $d --batch 1,8,32 --prompt-tokens 128 -n 32 -c 256 --stats > $O/batch-d$d-$SECONDS.txt 2>&1
  echo "batch depth $d rc=$?"; f2=$(ls -t $O/batch-d$d-*.txt | head -1)
  grep -E "^\| [0-9]" $f2 | cut -d"|" -f1-5,15-20; grep -E "CPU tier by width|^gpu-copy" $f2
done; el
cd $O && tar -czf out.tgz attn-*.txt tl.txt batch-*.txt && rm -f attn-*.txt batch-*.txt
