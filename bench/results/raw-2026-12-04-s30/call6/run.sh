#!/bin/bash
# Session 30, call 6. (1) The chunk form's Q4_K weight pack for the AMX
# GEMM: by table (vpshufb through 16-byte rows per scale; the default now)
# with the block 0, 16 or 32 on prefetched, against by 16-bit products
# (LS_Q8C_PACK=mul, as before), ls_bench_cpu_matmul at 8, 16 and 32
# tokens, 16 threads, 70b shapes, two rounds alternated; the unit tests of
# the chunk form on this CPU (AMX, AVX-512 BW). (2) Steal time: /proc/stat
# around an attention run (is the machine running our threads?).
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
mkdir -p $R/.ut && cd $R/.ut
timeout 120 $B/ls_unit_tests -tc="cpu_q8_chunks*,cpu_gemm_q8*" > $O/unit.txt 2>&1
echo "unit rc=$?"; grep -E "test cases|assertions|SKIPPED" $O/unit.txt; el
cd /tmp
m() { grep -E "^q4_K" $1 | tr -s ' ' | cut -c1-200; }
for r in 1 2; do
  V="mul lut0 lut16 lut32"; [ $r = 2 ] && V="lut32 lut16 lut0 mul"
  for v in $V; do
    case $v in mul) E="LS_Q8C_PACK=mul";; lut0) E="LS_Q8C_PACK_AHEAD=0";; lut16) E="LS_Q8C_PACK_AHEAD=16";; lut32) E="LS_Q8C_PACK_AHEAD=32";; esac
    env $E timeout 120 $B/ls_bench_cpu_matmul --threads 16 --ntok 8,16,32 --types q4_k --act q8 --path gemm --form chunks --amx on --shapes 70b --reps 7 > $O/pack-$r-$v.txt 2>&1
    echo "pack round $r $v rc=$?"; m $O/pack-$r-$v.txt
  done
done; el
grep -m3 -E "clock|^ +16 " $O/pack-1-mul.txt
s0=$(grep "^cpu " /proc/stat)
timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024 --reps 401 > $O/attn.txt 2>&1
s1=$(grep "^cpu " /proc/stat)
echo "attention rc=$?"; grep -E "^ +1024" $O/attn.txt
echo "proc/stat cpu before: $s0"; echo "proc/stat cpu after:  $s1"
cat /proc/stat | grep -E "^cpu[0-9]+ " | head -16 > $O/stat-cpus.txt
el
