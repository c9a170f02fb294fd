#!/bin/bash
# Session 26, call 6: the CPU attention as committed (433ff1a: fold as
# blocks finish, stamped done flags, partials fetched for writing) on the
# bench's head-major tiles and on the engine's own paged layout
# (model/kv_cache.h), with and without transparent huge pages.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
tar -xJf $R/.gpubin/diag.txz -C $B || exit 2
A=$B/ls_bench_cpu_attention
echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled) defrag: $(cat /sys/kernel/mm/transparent_hugepage/defrag)"
f() { grep -E "^ +[0-9]+ +[0-9]+ |timeline" $1 | sed -E 's/^ +([0-9]+ +[0-9]+) +[a-z0-9]+ +([a-z]+) +([0-9]+) +([0-9]+) +([^ ]+) +[0-9]+ +[0-9.]+ +([0-9.]+) .* ([0-9.]+) +([0-9.]+)$/\1 \2 blk \3 \5 us \6 host \7 ratio \8/'; }
for r in 1 2 3; do
  L=tiles,paged; [ $r = 2 ] && L=paged,tiles
  timeout 60 $A --threads 16 --ctx 1024,2048,4096,8192,16384 --layout $L --reps 41 > $O/huge-$r.txt 2>&1
  echo "huge round $r rc=$?"; f $O/huge-$r.txt
  timeout 60 $A --threads 16 --ctx 1024,2048,4096,8192,16384 --layout $L --reps 41 --no-huge > $O/nohuge-$r.txt 2>&1
  echo "no-huge round $r rc=$?"; f $O/nohuge-$r.txt
done; el
grep -i huge /proc/meminfo
