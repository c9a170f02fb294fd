#!/usr/bin/env python3
"""Train one of the two Llama models (target or draft) on the KJV training ids.

transformers' LlamaForCausalLM (GQA, SwiGLU, RMSNorm, Llama 3 RoPE, tied
embeddings; shapes in lm.PRESETS), float32 weights, bf16 autocast on the GPU,
AdamW (betas 0.9/0.95, weight decay on the matrices only), linear warmup then
cosine decay to --min-lr-frac of the peak, dropout on the residual branches
(the attention output and the MLP output: transformers' Llama has none of its
own), fixed seeds (torch's flash attention backward is not bitwise
deterministic, so two runs agree closely, not exactly).

Training windows: --seq tokens at a random offset of the training ids, the
first replaced by BOS, loss on every next token: the same view of the text as
llama.cpp's perplexity windows. Every --eval-every steps the validation NLL by
exactly that method (lm.window_nll, -c --eval-ctx) is measured; the weights
with the lowest are kept, and written at the end with save_pretrained
(safetensors, float32) beside the tokenizer files: an HF checkpoint folder.

Stops at --steps or after --max-seconds of training, whichever comes first
(the schedule is laid out over --steps either way). Logs to --log and stdout;
the curve (step, epoch, lr, train loss, val NLL) goes to --log too.
"""
import argparse
import json
import math
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lm  # noqa: E402  (defines: PRESETS, llama_config, check_rope, window_nll)


class Log:
    def __init__(self, path):
        self.f = open(path, "w") if path else None

    def __call__(self, msg):
        print(msg, flush=True)
        if self.f:
            self.f.write(msg + "\n")
            self.f.flush()


def lr_at(step, steps, warmup, peak, min_frac):
    if step < warmup:
        return peak * (step + 1) / warmup
    t = min(1.0, (step - warmup) / max(1, steps - warmup))
    return peak * (min_frac + (1 - min_frac) * 0.5 * (1 + math.cos(math.pi * t)))


def greedy(model, ids, n, device):
    import torch
    seq = list(ids)
    with torch.no_grad():
        for _ in range(n):
            logits = model(input_ids=torch.tensor([seq], device=device), use_cache=False).logits
            seq.append(int(torch.argmax(logits[0, -1])))
    return seq[len(ids):]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", required=True, choices=sorted(lm.PRESETS))
    ap.add_argument("--tokenizer", required=True, help="folder with tokenizer.json and its configs")
    ap.add_argument("--train-ids", required=True, help=".npy of the training ids (no BOS)")
    ap.add_argument("--valid", required=True, help="the validation text")
    ap.add_argument("--out", required=True, help="the HF checkpoint folder to write")
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--max-seconds", type=float, default=1e9)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=lm.MAX_POS)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr-frac", type=float, default=0.05)
    ap.add_argument("--warmup", type=int, default=60)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--eval-every", type=int, default=40)
    ap.add_argument("--eval-ctx", type=int, default=512)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--log", default=None)
    ap.add_argument("--json", default=None, help="write the summary here")
    args = ap.parse_args()

    import numpy as np
    import torch
    import torch.nn.functional as F
    import transformers
    from tokenizers import Tokenizer
    from transformers import LlamaForCausalLM

    log = Log(args.log)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    device = "cuda" if torch.cuda.is_available() else "cpu"
    tok = Tokenizer.from_file(os.path.join(args.tokenizer, "tokenizer.json"))
    V = tok.get_vocab_size()
    bos, eos = tok.token_to_id(lm.BOS), tok.token_to_id(lm.EOS)
    train = torch.from_numpy(np.load(args.train_ids).astype(np.int64)).to(device)
    with open(args.valid, encoding="utf-8") as f:
        valid_ids = tok.encode(f.read()).ids  # BOS first, as layerstream perplexity encodes
    N = train.numel()

    cfg = lm.llama_config(args.preset, V, bos, eos)
    model = LlamaForCausalLM(cfg).to(device)
    cfg_dict = model.config.to_dict()
    rope_err = lm.check_rope(model, cfg_dict)
    if rope_err > 1e-6:
        sys.exit(f"train: the model's inv_freq differs from Llama 3's formula by {rope_err:.2e}: "
                 f"the rope config did not take ({lm.rope_of(cfg_dict)})")
    n_params = sum(p.numel() for p in model.parameters())
    n_embed = model.model.embed_tokens.weight.numel()
    log(f"train {args.preset}: torch {torch.__version__}, transformers {transformers.__version__}, "
        f"{device} ({torch.cuda.get_device_name() if device == 'cuda' else 'cpu'})")
    log(f"model: {json.dumps(lm.PRESETS[args.preset])}, vocab {V}, tied embeddings, "
        f"rope {json.dumps(lm.rope_of(cfg_dict))}; {n_params} parameters "
        f"({n_params - n_embed} outside the embedding); attention {model.config._attn_implementation}")
    log(f"data: {N} training tokens, {len(valid_ids)} validation tokens; batch {args.batch} x "
        f"{args.seq} = {args.batch * args.seq} tokens/step ({args.batch * args.seq / N:.3f} epochs)")
    log(f"opt: AdamW lr {args.lr} (warmup {args.warmup}, cosine to {args.min_lr_frac}x over "
        f"{args.steps} steps), wd {args.weight_decay}, dropout {args.dropout}, seed {args.seed}")

    # Dropout on the residual branches, training only (hooks are not saved).
    def drop(_m, _inp, out):
        return F.dropout(out, args.dropout, model.training)
    if args.dropout > 0:
        for layer in model.model.layers:
            layer.self_attn.o_proj.register_forward_hook(drop)
            layer.mlp.register_forward_hook(drop)

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8,
                            fused=device == "cuda")
    gen = torch.Generator(device=device)
    gen.manual_seed(args.seed)
    arange = torch.arange(args.seq, device=device)

    def evaluate():
        model.eval()
        nll = lm.window_nll(model, valid_ids, args.eval_ctx, bos, device, batch=32)
        model.train()
        return float(nll.mean())

    curve, best = [], (float("inf"), -1)
    best_state = None
    log("step  epoch    lr        train    val_nll  val_ppl   s")
    t_start = time.time()
    tokens_seen, loss_acc, loss_n, step = 0, 0.0, 0, 0
    model.train()
    for step in range(args.steps):
        lr = lr_at(step, args.steps, args.warmup, args.lr, args.min_lr_frac)
        for g in opt.param_groups:
            g["lr"] = lr
        off = torch.randint(0, N - args.seq - 1, (args.batch, 1), generator=gen, device=device)
        x = train[off + arange]
        y = train[off + 1 + arange]
        x[:, 0] = bos
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=device == "cuda"):
            logits = model(input_ids=x, use_cache=False).logits
        loss = F.cross_entropy(logits.float().view(-1, V), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        tokens_seen += x.numel()
        loss_acc += float(loss)  # one sync a step: the model is small, this is cheap
        loss_n += 1
        last = step == args.steps - 1 or time.time() - t_start > args.max_seconds
        if (step + 1) % args.eval_every == 0 or last:
            v = evaluate()
            el = time.time() - t_start
            row = {"step": step + 1, "epoch": tokens_seen / N, "lr": lr,
                   "train_loss": loss_acc / loss_n, "val_nll": v, "val_ppl": math.exp(v),
                   "seconds": el}
            curve.append(row)
            mark = ""
            if v < best[0]:
                best = (v, step + 1)
                best_state = {k: t.detach().clone() for k, t in model.state_dict().items()}
                mark = " *"
            log(f"{step + 1:5d} {row['epoch']:6.2f} {lr:.2e} {row['train_loss']:8.4f} {v:8.4f} "
                f"{math.exp(v):8.3f} {el:6.1f}{mark}")
            loss_acc, loss_n = 0.0, 0
        if last:
            if step < args.steps - 1:
                log(f"train: stopped at step {step + 1} of {args.steps}: --max-seconds "
                    f"{args.max_seconds} reached")
            break
    t_train = time.time() - t_start

    model.load_state_dict(best_state)
    model.eval()
    log(f"best: step {best[1]}, val NLL {best[0]:.4f} (PPL {math.exp(best[0]):.3f}); first "
        f"{curve[0]['val_nll']:.4f}, last {curve[-1]['val_nll']:.4f}; {t_train:.1f} s, "
        f"{tokens_seen / t_train:.0f} tokens/s")
    prompt = tok.encode("In the beginning").ids
    sample = tok.decode(greedy(model, prompt, 48, device))
    log(f"sample (greedy, 48 tokens): In the beginning{sample!r}")

    try:
        model.save_pretrained(args.out, safe_serialization=True)
    except TypeError:  # transformers 5 always writes safetensors and dropped the flag
        model.save_pretrained(args.out)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(args.tokenizer, name), os.path.join(args.out, name))
    summary = {"preset": args.preset, "shape": lm.PRESETS[args.preset], "vocab": V,
               "parameters": n_params, "parameters_non_embedding": n_params - n_embed,
               "config": {k: v for k, v in cfg_dict.items() if not k.startswith("_")},
               "args": vars(args), "train_tokens": N, "tokens_seen": tokens_seen,
               "epochs": tokens_seen / N, "steps_run": step + 1, "train_seconds": t_train,
               "best_step": best[1], "best_val_nll": best[0], "best_val_ppl": math.exp(best[0]),
               "first": curve[0], "last": curve[-1], "curve": curve, "sample": sample,
               "torch": torch.__version__, "transformers": transformers.__version__}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
