#!/bin/bash
# The CPU rows of the quality table: on the 2-core AMD EPYC VM, one run at a
# time (some beside a build of the shared tree: the wall times are not
# speeds), the GGUFs converted here from the GPU run's checkpoints
# (gguf-sha256-here.txt), layerstream built from main (55cd2c8 + the batched
# decode work since committed as 7731c0b; HEAD's binary gives the same
# values). Threads: all (2).
V=tests/data/kjv/valid.txt; G=${G:-/tmp/g16}; LS=${LS:-./build/layerstream}
r() { local n=$1; shift; echo "\$ layerstream perplexity $*" > ppl-$n.txt
  /usr/bin/time -f "wall %e s, user %U s, max RSS %M KB" $LS perplexity "$@" >> ppl-$n.txt 2>&1; }
for m in target draft; do
  r $m-f32-cpu-exact -m $G/$m-f32.gguf -f $V -c 512 --backend cpu --act f32 --kv-type f32
  r $m-q8_0-cpu -m $G/$m-q8_0.gguf -f $V -c 512 --backend cpu
  r $m-f32-cpu -m $G/$m-f32.gguf -f $V -c 512 --backend cpu
done
for t in f16 bf16 q6_k q5_k_m q4_k_m q4_0; do for m in draft target; do
  r $m-$t-cpu -m $G/$m-$t.gguf -f $V -c 512 --backend cpu
done; done
