#!/usr/bin/env bash
# Session 15, call 4: CPU attention of one 70b layer, the session-14 kernel (sb_old) beside
# chunks of consecutive blocks per task, each block's value loop prefetching the next
# block's keys (sb_new, --chunk 1 2 4 8; 0 = its default), three rounds in turn; then the
# Xeon's f32 GEMM rate (PyTorch) for the compute floor.
set -u
O=$OUT; mkdir -p $O/bin && tar xJf .gpubin/att.txz -C $O/bin
C=1024,2048,4096,16384
for r in 1 2 3; do
  $O/bin/sb_old --threads 16 --reps 41 --ctx $C --json $O/old$r.json > $O/old$r.txt 2>&1
  $O/bin/sb_new --threads 16 --reps 41 --ctx $C --chunk 0,1,2,4,8 --json $O/new$r.json > $O/new$r.txt 2>&1
done
python3 - <<'PY'
import json,os,collections
O=os.environ['OUT']
for r in (1,2,3):
    old=json.load(open(f"{O}/old{r}.json")); new=json.load(open(f"{O}/new{r}.json"))
    print(f"round {r}: host {old['rows'][0]['host_gbps']:.1f} / {new['rows'][0]['host_gbps']:.1f}")
    for ctx in (1024,2048,4096,16384):
        o=[x['ratio'] for x in old['rows'] if x['ctx']==ctx][0]
        n={x['chunk']:x['ratio'] for x in new['rows'] if x['ctx']==ctx}
        print(f"  {ctx:6d} old {o:.2f} | new chunk " + " ".join(f"{k}:{v:.2f}" for k,v in sorted(n.items())))
PY
python3 - <<'PY' 2>&1 | tee $O/gemm.txt
import torch, time
for th in (1, 16):
    torch.set_num_threads(th)
    n = 2048 if th == 1 else 4096
    a = torch.randn(n, n); b = torch.randn(n, n)
    for _ in range(3): a @ b
    ts = []
    for _ in range(7):
        t = time.perf_counter(); a @ b; ts.append(time.perf_counter() - t)
    ts.sort(); t = ts[3]
    print(f"f32 gemm {n}^3 threads {th}: {2*n**3/t/1e9:.0f} GFLOP/s ({2*n**3/t/1e9/th:.0f} a core)")
PY
