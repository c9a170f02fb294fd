#!/bin/bash
# Session 58, call 4: the 1k call's ends and folds (the record's "Next"),
# with main's kernel as it is (old-attn.txz: ls_bench_cpu_attention_old,
# main's code): shorter blocks at 1k-2k (--block 0,64,96: the default is 128
# there, tapered), the fold's lines fetched first (--fold-pf), a group's
# heads as two rows (--group-split), each sweep's settings alternated in
# one run, three rounds; the pool's waits polling with the pause hint for
# their first 20 us (LS_POOL_PAUSE_US=20, not yet measured on a Xeon)
# against yielding from the start (0, the default), alternated; a timeline
# of blocks of 64 against the default.
# Run: bash bench/results/raw-2026-12-07-s58/call4/run.sh $PWD (timeout 240; carry .gpubin/old-attn.txz)
set -u
R=$1; B=/tmp/b; mkdir -p $B; tar -xJf "$R/.gpubin/old-attn.txz" -C $B || exit 2
A=$B/ls_bench_cpu_attention_old
row() { grep -E "^ +[0-9]+ +16 " "$1" | awk '{printf "%s %s %s %s us %s; ", $1, $5, $7, $10, $NF}'; }
for r in 1 2 3; do
  timeout 60 $A --ctx 1024,2048 --reps 31 --block 0,64,96 > $OUT/blk-$r.txt 2>&1
  echo "blocks round $r: host $(awk '/^ +16 /{print $2; exit}' $OUT/blk-$r.txt) GB/s"; row $OUT/blk-$r.txt; echo
  timeout 60 $A --ctx 1024,2048 --reps 31 --fold-pf off,on --group-split 1,2 > $OUT/fold-$r.txt 2>&1
  echo "fold round $r:"; row $OUT/fold-$r.txt; echo
  for pause in 20 0; do
    LS_POOL_PAUSE_US=$pause timeout 60 $A --ctx 1024,2048 --reps 31 > $OUT/pause$pause-$r.txt 2>&1
    echo "LS_POOL_PAUSE_US=$pause round $r:"; row $OUT/pause$pause-$r.txt; echo
  done
done
timeout 60 $A --ctx 1024 --reps 41 --block 0,64 --timeline > $OUT/tl.txt 2>&1
grep -E "^ +1024 |timeline|calls where" $OUT/tl.txt
timeout 60 $A --ctx 4096,16384 --reps 21 --block 0,64 > $OUT/long.txt 2>&1
echo "long:"; row $OUT/long.txt; echo
