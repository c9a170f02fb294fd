#!/bin/bash
# Issue 16 on one GPU machine (H200), in one call: the tokenizer, the target and
# the draft, their PyTorch evaluation, then with layerstream's binaries:
# convert both checkpoints to every type, perplexity of each on the
# validation text (CPU and CUDA), hf_check (transformers on the checkpoint
# vs layerstream logits on the F32 GGUF, CPU and CUDA) and the tokenizer
# against the `tokenizers` library's ids.
#
#   bash tools/train/run_on_gpu.sh [full|lean|smoke]
#
# full (~400 s): all of the above. lean (~250 s): training capped at 100 s,
# no CPU perplexity (run it elsewhere with the same binary: the GGUFs are
# rebuilt bit for bit from the checkpoints that come back). smoke (~110 s):
# the same steps, short: 30 s of training, F32 and Q8_0, the target only.
#
# Needs (carried, ignored by git): .gpubin/bin7.txz (layerstream and its
# tests, built from main) and .gpubin/train/kjv-train.txt.xz (corpus.py's
# training text: the machine has no `bible`). Writes under $OUT (at most 8
# files come back): results.tar.xz (logs, JSON summaries with the GGUFs'
# sizes and sha256, tokenizer files, configs, valid.ids, perplexity and
# hf_check outputs) and both float32 checkpoints' model.safetensors (the
# target's in parts under 16 MiB): `layerstream convert` makes every GGUF
# from them, the same bytes as here (summary.json has the sha256).
# Every `wait` here has only jobs to wait for: a process substitution such as
# `exec > >(tee log)` would make a plain `wait` hang (bash 5.1+ waits for it).
set -u -o pipefail
MODE=${1:-full}
O=${OUT:?OUT is not set}
W=/tmp/w16; B=/tmp/b16; V=tests/data/kjv/valid.txt; CTX=512
rm -rf $W $B; mkdir -p $W/log $W/gguf $W/ppl $W/hf $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=true
T0=$(date +%s)
DL=${DEADLINE:-370}; [ $MODE = lean ] && DL=${DEADLINE:-230}; [ $MODE = smoke ] && DL=${DEADLINE:-100}  # no new run starts after DL s
late() { [ $(( $(date +%s) - T0 )) -gt $DL ] && { echo "skipped (deadline $DL s): $*" | tee -a $W/log/timing.txt; return 0; }; return 1; }
stage() { echo "== $(( $(date +%s) - T0 )) s: $*" | tee -a $W/log/timing.txt; }
run() {  # run NAME TIMEOUT CMD...: output to $W/log/NAME.txt, rc recorded
  local name=$1 to=$2; shift 2
  late $name && return 99
  timeout $to "$@" > $W/log/$name.txt 2>&1; local rc=$?
  echo "$name rc=$rc" >> $W/log/rc.txt
  [ $rc -ne 0 ] && { echo "!! $name failed rc=$rc"; tail -n 15 $W/log/$name.txt; }
  return $rc
}

stage "start ($MODE)"
{ date -u; hostname; nproc; nvidia-smi -L; git log --oneline -1 2>/dev/null
  python3 -c 'import sys, torch, transformers, tokenizers, safetensors, numpy
print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda,
      "transformers", transformers.__version__, "tokenizers", tokenizers.__version__,
      "safetensors", safetensors.__version__, "numpy", numpy.__version__)'
} > $W/log/env.txt 2>&1; cat $W/log/env.txt
tar xJf .gpubin/bin7.txz -C $B && xz -dc .gpubin/train/kjv-train.txt.xz > $W/train.txt || exit 2
LS=$B/layerstream

stage tokenizer
run tokenizer 120 python3 tools/train/train_tokenizer.py --train $W/train.txt --valid $V \
  --out $W/tok --valid-ids $W/valid.ids --train-ids $W/train_ids.npy --json $W/tokenizer-summary.json \
  || exit 3
tail -n 4 $W/log/tokenizer.txt

# A few settings of each model side by side (the GPU runs them at once: one
# small model leaves it mostly idle); the one with the lowest validation NLL
# is kept. NAME:ARGS, ';' between; later train.py flags override earlier.
stage "training: target and draft variants side by side"
TV=${TARGET_VARIANTS:-"a:--dropout 0.2 --steps 1000;b:--dropout 0.3 --steps 1100;c:--dropout 0.2 --steps 1000 --lr 1e-3;d:--dropout 0.2 --steps 600"}
DV=${DRAFT_VARIANTS:-"a:--dropout 0.1 --steps 800;b:--dropout 0.0 --steps 500"}
MAXS=${MAX_SECONDS:-170}
if [ $MODE = lean ]; then
  MAXS=${MAX_SECONDS:-100}
  TV=${TARGET_VARIANTS:-"a:--dropout 0.2 --steps 700;b:--dropout 0.3 --steps 800;c:--dropout 0.2 --steps 500"}
  DV=${DRAFT_VARIANTS:-"a:--dropout 0.1 --steps 600;b:--dropout 0.0 --steps 400"}
fi
if [ $MODE = smoke ]; then TV="a:--steps 1200 --max-seconds 30"; DV="a:--steps 600 --max-seconds 12"; fi
for m in target draft; do
  VS=$TV; [ $m = draft ] && VS=$DV
  IFS=';' read -ra VA <<< "$VS"
  for v in "${VA[@]}"; do
    run train-$m-${v%%:*} 300 python3 tools/train/train.py --preset $m --tokenizer $W/tok \
      --train-ids $W/train_ids.npy --valid $V --out $W/$m-${v%%:*} --max-seconds $MAXS ${v#*:} \
      --log $W/log/train-$m-${v%%:*}.log --json $W/train-$m-${v%%:*}.json &
  done
done
wait
python3 - $W <<'EOF' | tee $W/log/sweep.txt
import glob, json, os, sys
W = sys.argv[1]
for m in ("target", "draft"):
    rows = []
    for p in sorted(glob.glob(f"{W}/train-{m}-*.json")):
        j = json.load(open(p))
        rows.append((j["best_val_nll"], os.path.basename(p)[len(f"train-{m}-"):-5], j))
    for nll, name, j in rows:
        a = j["args"]
        print(f"{m} {name}: dropout {a['dropout']} lr {a['lr']} steps {j['steps_run']}/{a['steps']} "
              f"best step {j['best_step']} val NLL {nll:.4f} PPL {j['best_val_ppl']:.3f} "
              f"({j['epochs']:.1f} epochs, {j['train_seconds']:.0f} s)")
    if rows:
        nll, name, j = min(rows, key=lambda r: r[0])
        print(f"{m} kept: {name}")
        os.rename(f"{W}/{m}-{name}", f"{W}/{m}")
        json.dump(j, open(f"{W}/train-{m}.json", "w"), indent=1)
EOF
for m in target draft; do
  k=$(sed -n "s/^$m kept: //p" $W/log/sweep.txt)
  grep -E "^(model|best|sample|train: stopped)" $W/log/train-$m-$k.log
done
[ -f $W/target/model.safetensors ] && [ -f $W/draft/model.safetensors ] || { stage "no checkpoint"; }

stage "eval.py (PyTorch F32) in the background; convert"
run eval 150 python3 tools/train/eval.py --target $W/target --draft $W/draft --text $V \
  --train-ids $W/train_ids.npy -c $CTX --json $W/eval.json &
EVAL=$!
TYPES="f32 f16 bf16 q8_0 q6_k q5_k_m q4_k_m q4_0"; [ $MODE = smoke ] && TYPES="f32 q8_0"
for m in target draft; do for t in $TYPES; do
  run convert-$m-$t 60 $LS convert $W/$m -o $W/gguf/$m-$t.gguf --quant $t &
done; wait $(jobs -p | grep -vx $EVAL); done
ls -l $W/gguf | tee $W/log/gguf-sizes.txt

stage "tokenizer: layerstream vs tokenizers on the validation text"
$LS tokenize -m $W/gguf/target-f32.gguf --no-bos < $V 2> $W/log/tokenize.err | tr -s ' \n' '\n\n' \
  | sed '/^$/d' > $W/ls_valid.ids
if cmp -s $W/ls_valid.ids $W/valid.ids; then echo "tokenize: identical ($(wc -l < $W/valid.ids) ids)"
else echo "tokenize: DIFFERENT"; diff $W/ls_valid.ids $W/valid.ids | head -5; fi | tee $W/log/tokenize.txt
if [ -f tests/data/kjv/valid.ids ]; then  # the committed expected ids: the same tokenizer again?
  cmp -s $W/valid.ids tests/data/kjv/valid.ids && r=equal || r=DIFFERENT
  echo "tokenize: this run's valid.ids vs tests/data/kjv/valid.ids: $r" | tee -a $W/log/tokenize.txt
fi

# Lanes side by side: hf_check (GPU); CUDA perplexity of the target, of the
# draft; CPU perplexity in three lanes of 4-5 threads. In each lane the F32
# runs come first (they are the checks); no run starts after the deadline.
stage "hf_check and perplexity: three GPU lanes, three CPU lanes"
ppl() {  # ppl MODEL TYPE BACKEND TAG [flags...]
  local m=$1 t=$2 be=$3 tag=$4; shift 4
  run ppl-$m-$t-$be$tag 90 $LS perplexity -m $W/gguf/$m-$t.gguf -f $V -c $CTX --backend $be "$@"
  cp $W/log/ppl-$m-$t-$be$tag.txt $W/ppl/ 2>/dev/null
}
HFM="target draft"; [ $MODE = smoke ] && HFM=target
(
  for m in $HFM; do for be in cpu cuda; do
    run hf-$m-$be 90 python3 tools/hf_check.py --gguf $W/gguf/$m-f32.gguf --hf-dir $W/$m --text $V \
      --offset 0 --n-prompt 256 --n-greedy 64 --tol 1e-4 --backend $be --device cuda --also-f64 \
      --layerstream $LS --workdir $W/hf/$m-$be --json $W/hf/$m-$be.json
    grep -E "^\| (prompt|greedy)|PASS|FAIL" $W/log/hf-$m-$be.txt
  done; done
) &
for m in target draft; do
  ( ppl $m f32 cuda -exact --act f32 --kv-type f32
    for t in $TYPES; do ppl $m $t cuda ""; done
    if [ $m = target ]; then
      ppl target f32 cuda -tiers --tiers AAHBHCAAHBHC; ppl target q8_0 cuda -tiers --tiers AAHBHCAAHBHC
    fi ) &
done
if [ $MODE = smoke ]; then L1="f32"; L2=""; L3="f32"
elif [ $MODE = lean ]; then L1=""; L2=""; L3=""
else L1="q8_0 q5_k_m q4_0 bf16"; L2="f32 q6_k q4_k_m f16"; L3="f32 q8_0 q6_k q5_k_m q4_k_m q4_0 f16 bf16"; fi
if [ $MODE != lean ]; then
  ( ppl target f32 cpu -exact --act f32 --kv-type f32 -t 5; for t in $L1; do ppl target $t cpu "" -t 5; done ) &
  ( for t in $L2; do ppl target $t cpu "" -t 5; done ) &
  ( ppl draft f32 cpu -exact --act f32 --kv-type f32 -t 4; for t in $L3; do ppl draft $t cpu "" -t 4; done ) &
fi
wait
grep -H "Final estimate" $W/ppl/*.txt | sed "s|$W/ppl/||" | tee $W/log/ppl-final.txt
grep "^eval:" $W/log/eval.txt

stage "summary and packing"
python3 - "$W" "$MODE" <<'EOF' > $W/summary.json
import glob, hashlib, json, os, re, sys
W, mode = sys.argv[1], sys.argv[2]
s = {"mode": mode, "gguf": {}, "ppl": {}}
for g in sorted(glob.glob(f"{W}/gguf/*.gguf")):
    s["gguf"][os.path.basename(g)] = {"bytes": os.path.getsize(g),
        "sha256": hashlib.sha256(open(g, "rb").read()).hexdigest()}
for p in sorted(glob.glob(f"{W}/ppl/*.txt")):
    t = open(p).read()
    m = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", t)
    s["ppl"][os.path.basename(p)[4:-4]] = [float(m.group(1)), float(m.group(2))] if m else None
for n in ("eval", "tokenizer-summary", "train-target", "train-draft"):
    if os.path.exists(f"{W}/{n}.json"):
        j = json.load(open(f"{W}/{n}.json")); j.pop("curve", None); s[n] = j
for h in sorted(glob.glob(f"{W}/hf/*.json")):
    j = json.load(open(h))
    s["hf_" + os.path.basename(h)[:-5]] = {k: j.get(k) for k in ("prompt_max_rel_err",
        "greedy_step_max_rel_err", "greedy_agree", "n_greedy", "min_top2_gap", "f64", "pass")}
print(json.dumps(s, indent=1))
EOF
stage done
cp $W/log/timing.txt $W/log/timing-final.txt
for m in target draft; do mkdir -p $W/ckpt-$m; cp $W/$m/*.json $W/ckpt-$m/ 2>/dev/null; done
(cd $W && tar cJf $O/results.tar.xz log ppl tok ckpt-target ckpt-draft hf/*.json *.json valid.ids \
  ls_valid.ids 2>/dev/null)
# The float32 checkpoints (the masters): the target's in parts under 16 MiB.
for m in target draft; do
  [ -f $W/$m/model.safetensors ] && split -b 15M -d $W/$m/model.safetensors $O/$m-f32.safetensors.part
done
sha256sum $W/target/model.safetensors $W/draft/model.safetensors | sed "s|$W/||" | tee $O/safetensors.sha256
ls -l $O; echo "total $(( $(date +%s) - T0 )) s"
