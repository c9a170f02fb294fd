#!/usr/bin/env python3
"""Independent check of layerstream against Hugging Face transformers.

Two modes. Export mode (a GGUF alone, e.g. a synthetic one):
  1. `layerstream export` writes the GGUF's weights dequantized to f32 as
     safetensors under HF names (Q/K rows un-permuted to HF's rotate_half
     convention) and an HF config.json;
  2. `layerstream logits` gives layerstream's logits at every position of a
     prompt of token ids (BOS, then random ids of the vocabulary, fixed seed),
     fed as one batch (the prefill path), then decodes --n-greedy tokens
     greedily one at a time (the decode path) and prints them;
  3. transformers' LlamaForCausalLM, built from config.json and the
     safetensors, runs the same ids.
Checkpoint mode (--hf-dir DIR --text FILE; --gguf is DIR converted to F32 by
`layerstream convert`): nothing is exported; transformers loads the HF
checkpoint folder itself (from_pretrained), and the prompt is a window of real
text: FILE encoded with DIR's tokenizer.json by the `tokenizers` library (BOS
first), --n-prompt tokens from token --offset on, the first replaced by BOS
(as a perplexity window starts). This checks `convert` and the engine
together against the checkpoint as trained.

Compared, exactly:
  - prompt logits: at each position p, max|ls - hf| / max|hf| over the vocab;
    the max over positions must be <= --tol;
  - decode-step logits: HF run once on prompt + layerstream's greedy tokens;
    its rows at the positions each greedy token was chosen from against
    layerstream's (same relative error, same tolerance);
  - greedy tokens: HF's own greedy loop (argmax of a full forward over the
    sequence so far, ties to the lowest id like layerstream) must produce the
    same --n-greedy ids as layerstream. The smallest top-1/top-2 logit gap is
    printed: a disagreement at a gap near the error level would be a tie, not
    a bug.

Exits 1 when a check fails, 2 on a setup error. Needs torch, transformers and
safetensors; the HF model runs in float32 (TF32 off) on --device.
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import time

import numpy as np


def sh(cmd, **kw):
    print("+ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.stderr.strip():
        print(r.stderr.rstrip(), flush=True)
    if r.returncode != 0:
        print(f"hf_check: command failed with exit {r.returncode}", file=sys.stderr)
        sys.exit(2)
    return r.stdout


def rel_err_rows(a, b):
    """Per row: max|a - b| / max|b|, in float64."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return np.abs(a - b).max(axis=1) / np.abs(b).max(axis=1)


def llama3_inv_freq(cfg, d):
    """inv_freq with Llama 3 scaling, from the formula Meta published. rope_theta
    and the scaling are top-level (transformers 4) or in rope_parameters (5)."""
    s = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    base = cfg.get("rope_theta") or s.get("rope_theta") or 10000.0
    out = []
    for i in range(d // 2):
        f = base ** (-2.0 * i / d)
        if s and s.get("rope_type") == "llama3":
            wl = 2 * math.pi / f
            lo_wl = s["original_max_position_embeddings"] / s["low_freq_factor"]
            hi_wl = s["original_max_position_embeddings"] / s["high_freq_factor"]
            if wl < hi_wl:
                div = 1.0
            elif wl > lo_wl:
                div = s["factor"]
            else:
                sm = (s["original_max_position_embeddings"] / wl - s["low_freq_factor"]) / (
                    s["high_freq_factor"] - s["low_freq_factor"])
                div = 1.0 / ((1 - sm) / s["factor"] + sm)
            f /= div
        out.append(f)
    return np.array(out)


def build_hf(workdir, device, dtype):
    import torch
    from safetensors.torch import load_file
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig.from_json_file(os.path.join(workdir, "config.json"))
    try:
        cfg._attn_implementation = "eager"  # plain matmul + softmax: no fused kernel's rounding
    except Exception as e:  # noqa: BLE001 (a newer transformers may refuse; sdpa is fine in f32)
        print(f"hf_check: could not select eager attention ({e}); using the default")
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg)
    state = load_file(os.path.join(workdir, "model.safetensors"))
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if "rotary_emb" not in k]
    if missing or unexpected:
        print(f"hf_check: state dict mismatch: missing {missing}, unexpected {unexpected}",
              file=sys.stderr)
        sys.exit(2)
    model = model.to(device=device, dtype=dtype).eval()
    return model, getattr(model.config, "_attn_implementation", "?")


def load_hf_dir(path, device, dtype):
    """transformers' own loading of a checkpoint folder, eager attention."""
    import torch
    from transformers import LlamaForCausalLM
    try:
        m = LlamaForCausalLM.from_pretrained(path, dtype=dtype, attn_implementation="eager")
    except TypeError:  # transformers 4 calls it torch_dtype
        m = LlamaForCausalLM.from_pretrained(path, torch_dtype=dtype, attn_implementation="eager")
    m = m.to(device=device, dtype=dtype).eval()
    return m, getattr(m.config, "_attn_implementation", "?")


def text_window(hf_dir, text_path, offset, n, bos):
    """n ids of the text from token `offset` on (BOS-first encoding), the first
    replaced by BOS."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(hf_dir, "tokenizer.json"))
    with open(text_path, encoding="utf-8") as f:
        ids = tok.encode(f.read()).ids
    if offset + n > len(ids):
        print(f"hf_check: {text_path} has {len(ids)} tokens, fewer than --offset + --n-prompt",
              file=sys.stderr)
        sys.exit(2)
    w = ids[offset: offset + n]
    w[0] = bos
    return w, tok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf", required=True, help="Llama GGUF (F32 for the 1e-3 check)")
    ap.add_argument("--hf-dir", default=None,
                    help="checkpoint mode: the HF checkpoint folder the F32 --gguf was converted from")
    ap.add_argument("--text", default=None, help="checkpoint mode: the text of the prompt window")
    ap.add_argument("--offset", type=int, default=0, help="checkpoint mode: the window's first token")
    ap.add_argument("--layerstream", required=True, help="the layerstream binary")
    ap.add_argument("--workdir", default=None, help="for the export and logits files")
    ap.add_argument("--n-prompt", type=int, default=64)
    ap.add_argument("--n-greedy", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--device", default="auto", help="auto, cpu or cuda")
    ap.add_argument("--backend", default="cpu", help="layerstream backend: cpu or cuda")
    ap.add_argument("--also-f64", action="store_true",
                    help="also run HF in float64 and report both sides' error against it")
    ap.add_argument("--json", default=None, help="write the summary here")
    args = ap.parse_args()

    import torch
    import transformers

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    work = args.workdir or os.path.splitext(args.gguf)[0] + ".hf_check"
    os.makedirs(work, exist_ok=True)
    name = os.path.basename(args.gguf)
    print(f"hf_check: {name}: torch {torch.__version__}, transformers {transformers.__version__}, "
          f"HF on {device}, layerstream --backend {args.backend}", flush=True)

    # 1. Export (export mode), or the checkpoint's config.json.
    t0 = time.time()
    if args.hf_dir:
        if not args.text:
            print("hf_check: --hf-dir needs --text (the prompt window's text)", file=sys.stderr)
            return 2
        with open(os.path.join(args.hf_dir, "config.json")) as f:
            cfg = json.load(f)
    else:
        sh([args.layerstream, "export", "-m", args.gguf, "--safetensors",
            os.path.join(work, "model.safetensors"), "--config", os.path.join(work, "config.json")])
        with open(os.path.join(work, "config.json")) as f:
            cfg = json.load(f)
    V = cfg["vocab_size"]
    bos = cfg.get("bos_token_id")

    # 2. The prompt (BOS, then random ids; or a window of the text); layerstream's
    # logits and greedy tokens.
    tok = None
    if args.hf_dir:
        ids, tok = text_window(args.hf_dir, args.text, args.offset, args.n_prompt, bos)
    else:
        rng = random.Random(args.seed)
        ids = ([bos] if bos is not None else []) + [rng.randrange(V) for _ in range(args.n_prompt)]
        ids = ids[: args.n_prompt]
    ls_prompt = os.path.join(work, "ls_prompt.f32")
    ls_greedy = os.path.join(work, "ls_greedy.f32")
    out = sh([args.layerstream, "logits", "-m", args.gguf, "--ids", " ".join(map(str, ids)),
              "-o", ls_prompt, "--greedy", str(args.n_greedy), "--greedy-logits", ls_greedy,
              "--backend", args.backend])
    ls_tokens = [int(x) for x in out.split()]
    ls_logits = np.fromfile(ls_prompt, dtype="<f4").reshape(len(ids), V)
    ls_step = np.fromfile(ls_greedy, dtype="<f4").reshape(args.n_greedy, V)
    t_ls = time.time() - t0

    # 3. HF.
    t0 = time.time()
    if args.hf_dir:
        model, attn = load_hf_dir(args.hf_dir, device, torch.float32)
    else:
        model, attn = build_hf(work, device, torch.float32)
    d = cfg["hidden_size"] // cfg["num_attention_heads"]
    try:  # HF's rotary frequencies: did it read the rope scaling of config.json?
        inv = model.model.rotary_emb.inv_freq.detach().double().cpu().numpy()
        want = llama3_inv_freq(cfg, d)
        rope_err = float(np.max(np.abs(inv - want) / want))
        rope_scale = float(getattr(model.model.rotary_emb, "attention_scaling", 1.0))
    except Exception as e:  # noqa: BLE001 (the logits comparison still covers rope)
        print(f"hf_check: cannot read HF's inv_freq ({e!r}); rope check skipped")
        rope_err, rope_scale = 0.0, 1.0

    def hf_logits(m, seq):
        with torch.no_grad():
            x = torch.tensor([seq], dtype=torch.long, device=device)
            return m(x, use_cache=False).logits[0].double().cpu().numpy()

    hf = hf_logits(model, ids)
    prompt_err = rel_err_rows(ls_logits, hf)
    full = ids + ls_tokens[:-1]
    hf_full = hf_logits(model, full)
    step_err = rel_err_rows(ls_step, hf_full[len(ids) - 1:])
    hf_tokens, margins = [], []
    seq = list(ids)
    for _ in range(args.n_greedy):
        row = hf_logits(model, seq)[-1]
        t = int(np.argmax(row))
        top2 = np.sort(row)[-2:]
        margins.append(float(top2[1] - top2[0]))
        hf_tokens.append(t)
        seq.append(t)
    agree = sum(1 for a, b in zip(ls_tokens, hf_tokens) if a == b)
    first_diff = next((i for i, (a, b) in enumerate(zip(ls_tokens, hf_tokens)) if a != b), None)
    f64 = None
    if args.also_f64:
        m64 = model.to(torch.float64)
        h64 = hf_logits(m64, ids)
        f64 = {"layerstream_vs_f64": float(rel_err_rows(ls_logits, h64).max()),
               "hf_f32_vs_f64": float(rel_err_rows(hf, h64).max())}
    t_hf = time.time() - t0

    # Report.
    ok_prompt = float(prompt_err.max()) <= args.tol
    ok_step = float(step_err.max()) <= args.tol
    ok_tokens = agree == args.n_greedy and len(ls_tokens) == args.n_greedy
    ok_rope = rope_err <= 1e-6 and abs(rope_scale - 1.0) <= 1e-12
    print(f"\nhf_check: {name}: {cfg['num_hidden_layers']} layers, dim {cfg['hidden_size']}, "
          f"heads {cfg['num_attention_heads']}/{cfg['num_key_value_heads']} (q/kv), vocab {V}, "
          f"rope {json.dumps(cfg.get('rope_scaling') or cfg.get('rope_parameters'))}, HF attention {attn}")
    print("position  max|ls-hf|/max|hf|")
    for p in range(len(ids)):
        if p < 4 or p % 8 == 7 or p == int(np.argmax(prompt_err)):
            print(f"{p:8d}  {prompt_err[p]:.3e}")
    print()
    print(f"| check | result | bound | pass |")
    print(f"|---|---|---|---|")
    print(f"| HF inv_freq vs llama3 formula (max rel) | {rope_err:.2e}, attention_scaling "
          f"{rope_scale:g} | 1e-6, 1 | {ok_rope} |")
    print(f"| prompt logits, {len(ids)} positions (prefill): max rel err | "
          f"{prompt_err.max():.3e} at position {int(np.argmax(prompt_err))} "
          f"(median {np.median(prompt_err):.2e}) | {args.tol:g} | {ok_prompt} |")
    print(f"| greedy-step logits, {args.n_greedy} steps (decode): max rel err | "
          f"{step_err.max():.3e} at step {int(np.argmax(step_err))} | {args.tol:g} | {ok_step} |")
    print(f"| greedy tokens, {args.n_greedy} steps | {agree}/{args.n_greedy} agree"
          f"{'' if first_diff is None else f', first difference at step {first_diff}'}; "
          f"min top-2 gap {min(margins):.3g} | all | {ok_tokens} |")
    if f64:
        print(f"| vs HF float64: layerstream / HF float32 | {f64['layerstream_vs_f64']:.3e} / "
              f"{f64['hf_f32_vs_f64']:.3e} | info | - |")
    if tok is not None:
        print(f"prompt window (token {args.offset} on): {tok.decode(ids[1:])[:300]!r}...")
        print(f"greedy text (layerstream): {tok.decode(ls_tokens)!r}")
    print(f"\nlayerstream tokens: {' '.join(map(str, ls_tokens))}")
    print(f"HF tokens:          {' '.join(map(str, hf_tokens))}")
    print(f"time: layerstream export+logits {t_ls:.1f} s, HF {t_hf:.1f} s")
    passed = ok_prompt and ok_step and ok_tokens and ok_rope
    print(f"hf_check: {name}: {'PASS' if passed else 'FAIL'}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": name, "prompt_max_rel_err": float(prompt_err.max()),
                       "prompt_rel_err": prompt_err.tolist(),
                       "greedy_step_max_rel_err": float(step_err.max()),
                       "greedy_agree": agree, "n_greedy": args.n_greedy,
                       "min_top2_gap": min(margins), "rope_inv_freq_rel_err": rope_err,
                       "ls_tokens": ls_tokens, "hf_tokens": hf_tokens, "ids": ids, "f64": f64,
                       "torch": torch.__version__, "transformers": transformers.__version__,
                       "device": device, "backend": args.backend, "tol": args.tol,
                       "mode": "checkpoint" if args.hf_dir else "export",
                       "hf_dir": args.hf_dir, "text": args.text, "offset": args.offset,
                       "pass": passed}, f, indent=1)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
