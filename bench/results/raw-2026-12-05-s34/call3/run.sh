#!/bin/bash
# Session 34, call 3: issue 14's last line, the CPU attention at 1k, with
# the bench's two defects gone (sessions 30 and 33) and the split call's
# first blocks given by pool task (session 33's default): --start claim,
# static and --fold-pf at 1k-16k, blocks of 0 and 256 at 1k-2k, four
# rounds, LS_POOL_PAUSE_US=50 in alternate ones; then the timeline at 1k.
# (The first part of session 33's call 3, which was lost; its other parts
# are in this session's calls 1 and 2.)
# Run: OUT=$OUT timeout 580 bash bench/results/raw-2026-12-05-s34/call3/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
cd /tmp
f() { grep -E "^ +[0-9]+ +16 " $1 | awk '{print $1, $5, $7, $10 " us", $15}'; }
for r in 1 2 3 4; do
  P=0; [ $((r % 2)) = 0 ] && P=50
  LS_POOL_PAUSE_US=$P timeout 90 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,16384 --start claim,static --fold-pf off,on --reps 41 > $O/all-$r.txt 2>&1
  echo "contexts round $r LS_POOL_PAUSE_US=$P rc=$?"; f $O/all-$r.txt | tr '\n' ';'; echo
  LS_POOL_PAUSE_US=$P timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048 --block 0,256 --start claim,static --reps 41 > $O/blk-$r.txt 2>&1
  echo "blocks round $r rc=$?"; f $O/blk-$r.txt | tr '\n' ';'; echo
done; el
timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024 --start claim,static --reps 201 --timeline > $O/tl.txt 2>&1
echo "timeline rc=$?"; grep -E "k1v2n|timeline|calls where" $O/tl.txt | cut -c1-250; el
cd $O && tar -czf out.tgz all-*.txt blk-*.txt tl.txt && rm -f all-*.txt blk-*.txt tl.txt; ls -la
