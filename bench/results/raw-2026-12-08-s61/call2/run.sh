#!/bin/bash
# Session 61, call 2 (any GPU machine): main after demote and endgame came
# out (bin.txz built at .gpubin/bin.commit).
# (1) issue 20's H200 gap on an H100: the decode GEMVs as decode runs them
#     (ls_bench_matmul --graph, the 8b shapes) on all 132 SMs and with 38
#     held (tests/bench/sm_hold.cuh), so that each SM must bring what an
#     H200's SM must (4.2 against 3.0 TB/s over the same 132 SMs),
#     alternated, two rounds each: which forms keep their GB/s there;
# (2) issue 14's attention line as main stands: 1k-16k, the read alone
#     beside it, three rounds; then 12 and 16 threads at 1k alternated;
# (3) the whole GPU suite and the whole unit suite on this host (its Xeon
#     runs the AVX-512 VNNI / AMX paths the dev machine lacks), as time allows.
# Run: OUT=$OUT bash bench/results/raw-2026-12-08-s61/call2/run.sh $PWD (timeout 590; carry
# .gpubin/bin.txz; model/weights/*.gguf moved aside)
set -u
R=$1; O=$OUT/r; LIMIT=560
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
lscpu | grep -E "Model name|^CPU\(s\)"
timeout 30 $B/ls_gpu_tests -tc="sm_hold*" > $O/sm-hold-test.txt 2>&1; echo "sm_hold test rc=$?"
grep -E "test cases|assertions|ERROR" $O/sm-hold-test.txt
for r in 1 2; do
  for h in 0 38; do
    timeout 90 $B/ls_bench_matmul --graph --hold-sms $h > $O/graph-h$h-$r.txt 2>&1
    echo "graph, $h SMs held, round $r: rc=$?"; grep -E "^bound: D2D|^held|^holding" $O/graph-h$h-$r.txt
  done
done; el; pack
# Each form's GB/s per shape, all SMs against 38 held (the better of two rounds).
(python3 - $O <<'PY'
import glob, re, sys, collections
best = collections.defaultdict(dict)
for f in glob.glob(sys.argv[1] + "/graph-h*-*.txt"):
    h = re.search(r"graph-h(\d+)-", f).group(1)
    for line in open(f):
        if "graph x20" not in line: continue
        key = " ".join(line.split(":", 1)[0].split()[3:])
        for m in re.finditer(r"(v\d+[eap]?)\s+([\d.]+) us\s+(\d+) GB/s", line):
            k = (key, m.group(1)); g = int(m.group(3))
            best[k][h] = max(best[k].get(h, 0), g)
for (key, v), d in sorted(best.items()):
    if "0" in d and "38" in d and v in ("v5", "v6", "v7", "v7e", "v7a", "v7p", "v72", "v78"):
        print(f"{key:22s} {v:5s} all SMs {d['0']:5d} GB/s, 38 held {d['38']:5d} ({d['38']/d['0']:.2f})")
PY
) | tee $O/hold-summary.txt
row() { grep -E "^ +[0-9]+ +1[26] " "$1" | awk '{printf "%s t%s %s %s us %s; ", $1, $2, $7, $10, $NF}'; echo; }
for r in 1 2 3; do
  left 40 || break
  timeout 60 $B/ls_bench_cpu_attention --ctx 1024,2048,4096,8192,16384 --reps 31 --read > $O/attn-$r.txt 2>&1
  echo "round $r: host $(awk '/^ +16 /{print $2; exit}' $O/attn-$r.txt) GB/s"; row $O/attn-$r.txt
done; el
for r in 1 2; do
  left 30 || break
  timeout 40 $B/ls_bench_cpu_attention --ctx 1024 --reps 61 --threads 12,16 > $O/thr-$r.txt 2>&1
  echo "threads round $r: host $(awk '/^ +1[26] /{print $1 ": " $2}' $O/thr-$r.txt | tr '\n' ' ')"; row $O/thr-$r.txt
done; el; pack
left 100 && timeout $((LIMIT - SECONDS - 60)) $B/ls_gpu_tests > $O/gpu-tests.txt 2>&1; echo "gpu tests rc=$?"
grep -E "test cases|assertions|ERROR|FAILED|SKIP" $O/gpu-tests.txt | head -12; el; pack
left 40 && timeout $((LIMIT - SECONDS - 10)) $B/ls_unit_tests > $O/unit-tests.txt 2>&1; echo "unit tests rc=$?"
grep -E "test cases|assertions|ERROR|FAILED" $O/unit-tests.txt | head -12; el; pack
finish
