#!/usr/bin/env python3
"""PyTorch evaluation of the trained target and draft on the validation text.

  1. Perplexity by llama.cpp's method, as tools/cmd_perplexity.cpp computes it:
     the text encoded once with BOS first; non-overlapping windows of -c
     tokens, each run alone with its first token replaced by BOS; positions
     c/2 .. c-2 scored against the next token, -log softmax in float64;
     PPL = exp(mean NLL), +/- = PPL * sqrt(var / (N-1)). The models run in
     float32 with TF32 off, so the figure is the F32 reference for
     `layerstream perplexity` on the F32 GGUF.
  2. A unigram model of the same scored tokens: token frequencies of the
     training ids with add-one (Laplace) smoothing over the whole vocabulary,
     p(t) = (count(t) + 1) / (N + V).
  3. The draft's greedy agreement with the target: over every position of the
     same windows, the fraction where the two argmaxes are equal (all
     positions, and the scored half); and on greedy continuations: from
     --n-prompts prompts (BOS + --prompt-len tokens of the validation text,
     evenly spaced), the target decodes --n-gen tokens greedily; at each step
     the draft, given the same prefix, proposes its argmax; the fraction that
     equal the target's token, and what greedy speculative decoding with k
     drafted tokens would gain (tokens per target pass, k = 1..8).
Writes a JSON summary (--json) and prints a table.
"""
import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lm  # noqa: E402  (defines: window_nll, ppl_summary)


def load(path, device):
    import torch
    from transformers import LlamaForCausalLM
    try:
        m = LlamaForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager")
    except TypeError:  # transformers 4 calls it torch_dtype
        m = LlamaForCausalLM.from_pretrained(path, torch_dtype=torch.float32,
                                             attn_implementation="eager")
    return m.to(device).float().eval()


def argmax_windows(model, ids, n_ctx, bos_id, device, batch=16):
    """Argmax at every position of the perplexity windows, (n_chunk, n_ctx)."""
    import torch
    n_chunk = len(ids) // n_ctx
    x_all = torch.tensor(ids[: n_chunk * n_ctx], dtype=torch.long).view(n_chunk, n_ctx)
    x_all[:, 0] = bos_id
    out = []
    with torch.no_grad():
        for b0 in range(0, n_chunk, batch):
            logits = model(input_ids=x_all[b0:b0 + batch].to(device), use_cache=False).logits
            out.append(logits.argmax(-1).cpu())
    return torch.cat(out)


def greedy_batch(model, prompts, n, device):
    """Greedy continuations of equal-length prompts, a full forward per step."""
    import torch
    x = torch.tensor(prompts, dtype=torch.long, device=device)
    with torch.no_grad():
        for _ in range(n):
            nxt = model(input_ids=x, use_cache=False).logits[:, -1].argmax(-1)
            x = torch.cat([x, nxt[:, None]], 1)
    return x


def spec_gain(agree_rows, k):
    """Tokens per target pass of greedy speculative decoding with k drafted tokens,
    along the target's greedy path (agree_rows: per prompt, per step, bool)."""
    produced = passes = 0
    for row in agree_rows:
        pos = 0
        while pos < len(row):
            m = 0
            while m < k and pos + m < len(row) and row[pos + m]:
                m += 1
            step = min(m + 1, len(row) - pos)  # the accepted run, then the target's own token
            produced += step
            passes += 1
            pos += step
    return produced / passes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", required=True, help="HF checkpoint folder of the target")
    ap.add_argument("--draft", required=True, help="HF checkpoint folder of the draft")
    ap.add_argument("--text", required=True, help="validation text")
    ap.add_argument("--train-ids", required=True, help=".npy training ids (for the unigram)")
    ap.add_argument("-c", "--ctx", type=int, default=512)
    ap.add_argument("--n-prompts", type=int, default=32)
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--n-gen", type=int, default=64)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    import numpy as np
    import torch
    import transformers
    from tokenizers import Tokenizer

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    device = args.device if args.device != "auto" else (
        "cuda" if torch.cuda.is_available() else "cpu")
    t0 = time.time()
    tok = Tokenizer.from_file(os.path.join(args.target, "tokenizer.json"))
    V = tok.get_vocab_size()
    bos = tok.token_to_id(lm.BOS)
    with open(args.text, encoding="utf-8") as f:
        ids = tok.encode(f.read()).ids  # BOS first (the post-processor), like layerstream
    assert ids[0] == bos, "the tokenizer does not add BOS"
    res = {"text": args.text, "n_tokens": len(ids), "n_ctx": args.ctx, "device": device,
           "torch": torch.__version__, "transformers": transformers.__version__}

    # 1. Perplexity, llama.cpp's windows.
    models = {}
    for name, path in (("target", args.target), ("draft", args.draft)):
        m = load(path, device)
        models[name] = m
        nll = lm.window_nll(m, ids, args.ctx, bos, device)
        s = lm.ppl_summary(nll, args.ctx)
        s["parameters"] = sum(p.numel() for p in m.parameters())
        res[name] = s
        print(f"eval: {name}: PPL = {s['ppl']:.4f} +/- {s['err']:.5f} over {s['n_scored']} "
              f"tokens ({len(s['running'])} windows of {args.ctx})", flush=True)

    # 2. Unigram, add-one smoothing, on the same scored tokens.
    train_ids = np.load(args.train_ids).astype(np.int64)
    counts = np.bincount(train_ids, minlength=V).astype(np.float64)
    logp = np.log((counts + 1) / (counts.sum() + V))
    n_chunk = len(ids) // args.ctx
    first = args.ctx // 2
    win = np.asarray(ids[: n_chunk * args.ctx]).reshape(n_chunk, args.ctx)
    scored = win[:, first + 1:].reshape(-1)
    res["unigram"] = {"ppl": float(np.exp(-logp[scored].mean())), "n_scored": int(scored.size),
                      "ppl_all_valid_tokens": float(np.exp(-logp[np.asarray(ids[1:])].mean())),
                      "smoothing": "add-one (Laplace) over the vocabulary",
                      "train_tokens": int(train_ids.size), "vocab": V}
    print(f"eval: unigram (add-one): PPL = {res['unigram']['ppl']:.4f}", flush=True)

    # 3. Draft/target agreement: on the windows...
    a_t = argmax_windows(models["target"], ids, args.ctx, bos, device)
    a_d = argmax_windows(models["draft"], ids, args.ctx, bos, device)
    eq = (a_t == a_d)
    # ... and along the target's greedy continuations.
    step = (len(ids) - args.prompt_len - 1) // args.n_prompts
    prompts = [[bos] + ids[1 + i * step: 1 + i * step + args.prompt_len - 1]
               for i in range(args.n_prompts)]
    seq = greedy_batch(models["target"], prompts, args.n_gen, device)
    with torch.no_grad():
        d_logits = models["draft"](input_ids=seq, use_cache=False).logits
    L = len(prompts[0])
    d_pred = d_logits[:, L - 1:-1].argmax(-1)  # the draft's guess of each generated token
    agree = (d_pred == seq[:, L:]).cpu()
    res["agreement"] = {
        "windows_all_positions": float(eq.float().mean()),
        "windows_scored_half": float(eq[:, first:args.ctx - 1].float().mean()),
        "n_window_positions": int(eq.numel()),
        "greedy": float(agree.float().mean()), "n_prompts": args.n_prompts,
        "prompt_len": L, "n_gen": args.n_gen,
        "spec_tokens_per_target_pass": {k: round(spec_gain(agree.tolist(), k), 4)
                                        for k in range(1, 9)},
        "greedy_samples": [tok.decode(seq[i].tolist()[1:]) for i in range(3)],
    }
    res["seconds"] = time.time() - t0
    a = res["agreement"]
    print(f"eval: draft/target argmax agreement: {a['windows_all_positions']:.4f} over the "
          f"windows ({a['windows_scored_half']:.4f} on the scored halves), {a['greedy']:.4f} on "
          f"{args.n_prompts} greedy continuations of {args.n_gen}; tokens per target pass at "
          f"k=4: {a['spec_tokens_per_target_pass'][4]}")
    print(f"eval: sample: {a['greedy_samples'][0]!r}")
    print(f"eval: {res['seconds']:.1f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
