"""What train.py, eval.py and train_tokenizer.py share: the special tokens, the two
model shapes, Llama 3's RoPE, and llama.cpp's perplexity windows.

Only the standard library at import; torch and transformers are imported by the
functions that need them, so `python3 -m py_compile` and the corpus work without.
"""
import inspect
import math
import os
import re

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Llama 3's special tokens that its chat template uses; they take the last ids
# of the vocabulary, as Llama 3's do (128000..).
BOS, EOS = "<|begin_of_text|>", "<|end_of_text|>"
SPECIALS = [BOS, EOS, "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
VOCAB_SIZE = 4096  # the BPE vocabulary (256 bytes + merges) and the specials

# Meta's Llama 3 (8B Instruct) chat template, as in its tokenizer_config.json.
CHAT_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
    "+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
    "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"
    "{% endif %}")


def llama3_split_regex():
    """Llama 3's pre-tokenizer regex, read from model/hf_tokenizer.cpp (kLlama3Split),
    the constant `convert` compares tokenizer.json's with, byte for byte."""
    path = os.path.join(REPO, "model", "hf_tokenizer.cpp")
    with open(path, encoding="utf-8") as f:
        m = re.search(r'kLlama3Split\s*=\s*R"re\((.*?)\)re"', f.read(), re.S)
    if not m:
        raise SystemExit(f"{path}: kLlama3Split not found")
    return m.group(1)


# The two models: the same width, heads and tokenizer; the draft is shallow.
# head_dim 64: the CUDA backend's prefill attention runs 64 and 128 (others
# fall back to the scalar kernel); 256 and 768 are multiples of the K-quants'
# 256-element blocks, so Q6_K .. Q4_K_M quantize every matrix as named.
PRESETS = {
    "target": dict(hidden_size=256, intermediate_size=768, num_hidden_layers=12,
                   num_attention_heads=4, num_key_value_heads=2),
    "draft": dict(hidden_size=256, intermediate_size=768, num_hidden_layers=3,
                  num_attention_heads=4, num_key_value_heads=2),
}
MAX_POS = 1024  # trained context
ROPE_THETA = 500000.0
# Llama 3.1's scaling, as is: with head_dim 64 and theta 500000 it changes 17
# of the 32 frequencies (wavelengths past 8192/4 = 2048 tokens), so convert and
# the engine are checked on a real llama3 rope. transformers 5 warns that
# original_max_position_embeddings (8192) exceeds max_position_embeddings
# (1024); the frequencies are still Meta's formula (check_rope() verifies).
ROPE_SCALING = dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                    original_max_position_embeddings=8192)


def llama_config(preset, vocab_size, bos_id, eos_id):
    """A transformers LlamaConfig; rope given the way the installed version wants it
    (transformers 5: rope_parameters with rope_theta inside; 4: rope_theta + rope_scaling)."""
    from transformers import LlamaConfig
    kw = dict(PRESETS[preset], vocab_size=vocab_size, max_position_embeddings=MAX_POS,
              rms_norm_eps=1e-5, hidden_act="silu", tie_word_embeddings=True,
              bos_token_id=bos_id, eos_token_id=eos_id, attention_bias=False, mlp_bias=False,
              attention_dropout=0.0, initializer_range=0.02)
    try:
        params = inspect.signature(LlamaConfig.__init__).parameters
    except (TypeError, ValueError):
        params = {}
    if "rope_parameters" in params:
        kw["rope_parameters"] = dict(ROPE_SCALING, rope_theta=ROPE_THETA)
    else:
        kw["rope_theta"] = ROPE_THETA
        kw["rope_scaling"] = dict(ROPE_SCALING)
    return LlamaConfig(**kw)


def rope_of(cfg):
    """(theta, scaling dict or None) from a config.json dict of either version."""
    s = cfg.get("rope_scaling") or cfg.get("rope_parameters") or None
    theta = cfg.get("rope_theta") or (s or {}).get("rope_theta") or 10000.0
    if s and s.get("rope_type", s.get("type")) in (None, "default"):
        s = None
    return float(theta), s


def llama3_inv_freq(cfg, d):
    """inv_freq with Llama 3 scaling, from the formula Meta published (a list)."""
    base, s = rope_of(cfg)
    out = []
    for i in range(d // 2):
        f = base ** (-2.0 * i / d)
        if s and s.get("rope_type", s.get("type")) == "llama3":
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
    return out


def check_rope(model, cfg_dict):
    """Max relative difference between the model's inv_freq and Llama 3's formula."""
    d = cfg_dict["hidden_size"] // cfg_dict["num_attention_heads"]
    inv = model.model.rotary_emb.inv_freq.detach().double().cpu().tolist()
    want = llama3_inv_freq(cfg_dict, d)
    return max(abs(a - b) / b for a, b in zip(inv, want))


def window_nll(model, ids, n_ctx, bos_id, device, batch=16, chunks=-1):
    """llama.cpp's perplexity windows (tools/cmd_perplexity.cpp): the tokens (BOS
    first, as encoded) cut into non-overlapping windows of n_ctx, each run alone
    from position 0 with its first token replaced by BOS; the logits at positions
    n_ctx/2 .. n_ctx-2 scored against the next token, -log softmax in float64.
    Returns the NLLs (float64 tensor, window by window, position order)."""
    import torch
    n_chunk = len(ids) // n_ctx
    if n_chunk < 2:
        raise SystemExit(f"window_nll: {len(ids)} tokens: fewer than 2 windows of {n_ctx}")
    if chunks >= 0:
        n_chunk = min(n_chunk, chunks)
    first = n_ctx // 2
    all_ids = torch.tensor(ids[: n_chunk * n_ctx], dtype=torch.long).view(n_chunk, n_ctx)
    out = []
    with torch.no_grad():
        for b0 in range(0, n_chunk, batch):
            x = all_ids[b0:b0 + batch].clone()
            y = x[:, first + 1:].clone()  # targets of positions first .. n_ctx-2
            x[:, 0] = bos_id
            logits = model(input_ids=x.to(device), use_cache=False).logits[:, first:n_ctx - 1]
            logits = logits.double()
            nll = torch.logsumexp(logits, -1) - logits.gather(-1, y.to(device)[..., None])[..., 0]
            out.append(nll.reshape(-1).cpu())
    return torch.cat(out)


def ppl_summary(nll, n_ctx):
    """PPL, its +/- as llama.cpp prints it, and the running [i] values."""
    import torch
    nll = nll.double()
    n = nll.numel()
    mean = float(nll.mean())
    var = float((nll * nll).mean()) - mean * mean
    ppl = math.exp(mean)
    per = n_ctx - 1 - n_ctx // 2  # scored tokens per window
    run = torch.cumsum(nll, 0)[per - 1::per] / torch.arange(per, n + 1, per, dtype=torch.float64)
    return {"ppl": ppl, "err": ppl * math.sqrt(var / (n - 1)), "nll_mean": mean, "n_scored": n,
            "n_ctx": n_ctx, "running": [round(math.exp(float(v)), 4) for v in run]}
