#!/bin/bash
# Speculative decoding on the trained KJV pair, CPU (the 2-core dev VM, -t 1):
# acceptance and tokens per target pass for K = 1..8 (--draft-min K; session 9: --draft self:5,8
# --draft-max K) with the draft model and lookup, and K chosen by the run;
# plain decoding run before each, the ratio to the mean of the plain runs.
L=${1:-build/layerstream}
P="$(head -c 600 tests/data/kjv/valid.txt | tr '\n' ' ')"
D=model/weights/kjv-draft-q8_0.gguf
common=(-p "$P" -n 256 --temp 0 --ids --no-display-prompt -t 1)
rate() { grep -o 'generated [0-9]* tokens, [0-9.]* tok/s' "$1" | awk '{print $4}'; }
$L decode "${common[@]}" > /tmp/vs_plain.txt 2> /tmp/vs_plain.err
echo "plain: $(rate /tmp/vs_plain.err) tok/s"
for kind in self:5,8; do
  for k in auto 1 2 3 4 5 6 7 8; do
    $L decode "${common[@]}" > /tmp/vs_p.txt 2> /tmp/vs_p.err
    if [ $k = auto ]; then kk=(); else kk=(--draft-min $k --draft-max $k --draft-p-min 0); fi
    $L decode "${common[@]}" --draft "$kind" "${kk[@]}" > /tmp/vs_s.txt 2> /tmp/vs_s.err
    same=$(cmp -s <(tail -1 /tmp/vs_plain.txt) <(tail -1 /tmp/vs_s.txt) && echo same || echo DIFFERENT)
    p=$(rate /tmp/vs_p.err); s=$(rate /tmp/vs_s.err)
    echo "$(basename $kind) K=$k: plain $p, spec $s tok/s, ratio $(python3 -c "print(f'{$s/$p:.2f}')") | ids $same | $(grep -o 'speculative.*' /tmp/vs_s.err)"
  done
done
