#!/bin/bash
# Session 25, call 3: the unit cases that fail on the H200 host (junit,
# failures only; call 1 said 51 of 327 failed and gave no list), run from a
# directory on disk; then tiled keys by prefetch distance (--ahead: 0 is one
# step of 32 positions) and block length, against the row form, two rounds.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
df -h /tmp $R | tail -2
mkdir -p $R/.ut && cd $R/.ut
LS_TEST_BINARY=$B/layerstream timeout 300 $B/ls_unit_tests -r=junit > $O/unit.xml 2>$O/unit-err.txt
echo "unit rc=$?"
python3 - $O/unit.xml <<'PY' | tee $O/unit-fail.txt | head -80
import sys, re
x = open(sys.argv[1], errors="replace").read()
cases = re.findall(r'<testcase [^>]*name="([^"]*)"[^>]*?(/>|>(.*?)</testcase>)', x, re.S)
bad = [(n, b) for n, _, b in cases if '<failure' in (b or '') or '<error' in (b or '')]
print(len(cases), "cases,", len(bad), "failed")
for n, b in bad:
    m = re.search(r'<failure[^>]*message="([^"]*)"', b) or re.search(r'<failure[^>]*>(.{0,300})', b, re.S)
    print("FAIL:", n, "|", (m.group(1) if m else "")[:300].replace("\n", " "))
PY
tail -5 $O/unit-err.txt; el
cd /tmp
for r in 1 2; do
  timeout 100 $B/ls_bench_cpu_attention --threads 16 --ctx 256,1024,4096,16384 --layout tiles --ahead 0,64,128,256 --prefetch k1v2,k2v2 --reps 41 > $O/ahead-$r.txt 2>&1
  echo "ahead round $r rc=$?"; grep -E "^ +[0-9]+ +16 " $O/ahead-$r.txt | awk '{print $1,$4,$6,$7,$10,$14,$15}'
  timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 256,1024,4096,16384 --layout tiles,heads --block 0,64,256 --reps 41 > $O/block-$r.txt 2>&1
  echo "block round $r rc=$?"; grep -E "^ +[0-9]+ +16 " $O/block-$r.txt | awk '{print $1,$4,$5,$10,$14,$15}'
done; el
