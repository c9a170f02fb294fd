#!/usr/bin/env python3
"""Train the byte-level BPE tokenizer (Llama 3's kind) on the training text.

The `tokenizers` library, built as Llama 3's tokenizer.json is:
  - model BPE, no unk, no byte_fallback, ignore_merges true (a word that is a
    token as a whole skips the merges: Llama 3's, and layerstream's tokenizer);
  - pre_tokenizer Sequence[Split(Llama 3's regex, Isolated), ByteLevel(
    add_prefix_space false, use_regex false)], the regex read from
    model/hf_tokenizer.cpp so that `convert` accepts it byte for byte;
  - decoder ByteLevel; post_processor Sequence[ByteLevel, TemplateProcessing
    "<|begin_of_text|> $A"] (BOS first, as Llama 3's);
  - vocabulary: the 256 byte symbols and merges up to 4091, then the five
    special tokens at ids 4091..4095.
tokenizer_config.json names BOS/EOS and carries Llama 3's chat template.

Writes, under --out: tokenizer.json, tokenizer_config.json,
special_tokens_map.json; --valid-ids: the library's ids of the whole
validation text, without BOS, one decimal id per line (the expected ids of
the C++ tokenizer test); --train-ids: the training text's ids (numpy uint16,
no BOS) for train.py.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lm  # noqa: E402  (defines: SPECIALS, VOCAB_SIZE, CHAT_TEMPLATE, llama3_split_regex)


def build(train_text, vocab_size):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    regex = lm.llama3_split_regex()
    tok = Tokenizer(models.BPE(byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(regex), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size - len(lm.SPECIALS), min_frequency=2,
                                  show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    lines = train_text.splitlines(keepends=True)  # a verse and its newline, as the text has them
    tok.train_from_iterator(lines, trainer=trainer, length=len(lines))
    tok.add_special_tokens(lm.SPECIALS)
    bos_id = tok.token_to_id(lm.BOS)
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single=f"{lm.BOS} $A", pair=f"{lm.BOS} $A {lm.BOS} $B:1",
                                      special_tokens=[(lm.BOS, bos_id)]),
    ])
    # ignore_merges through the JSON: a trainer may rebuild the model without it.
    j = json.loads(tok.to_str())
    j["model"]["ignore_merges"] = True
    tok = Tokenizer.from_str(json.dumps(j, ensure_ascii=False))
    return tok, regex


def check(tok, regex):
    """The tokenizer.json fields convert's check_pre_tokenizer reads, and BOS."""
    j = json.loads(tok.to_str())
    want_pre = [
        {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
    ]
    pre = j["pre_tokenizer"]
    assert pre["type"] == "Sequence" and len(pre["pretokenizers"]) == 2, pre
    for got, want in zip(pre["pretokenizers"], want_pre):  # the fields convert reads
        assert all(got.get(k) == v for k, v in want.items()), (got, want)
    assert j.get("normalizer") is None, j.get("normalizer")
    m = j["model"]
    assert m["type"] == "BPE" and not m.get("byte_fallback") and m.get("ignore_merges") is True, {
        k: v for k, v in m.items() if k not in ("vocab", "merges")}
    n = tok.get_vocab_size(with_added_tokens=True)
    assert n == lm.VOCAB_SIZE, f"vocabulary {n}, wanted {lm.VOCAB_SIZE}"
    ids = [tok.token_to_id(s) for s in lm.SPECIALS]
    assert ids == list(range(n - len(lm.SPECIALS), n)), ids
    enc = tok.encode("In the beginning")
    assert enc.ids[0] == ids[0] and len(enc.ids) > 1, enc.ids
    assert tok.decode(enc.ids, skip_special_tokens=True) == "In the beginning"
    return ids


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", required=True, help="training text (corpus.py)")
    ap.add_argument("--valid", required=True, help="validation text (tests/data/kjv/valid.txt)")
    ap.add_argument("--out", required=True, help="folder for the tokenizer files")
    ap.add_argument("--valid-ids", required=True, help="write the validation ids here")
    ap.add_argument("--train-ids", required=True, help="write the training ids here (.npy)")
    ap.add_argument("--json", default=None, help="write a summary here")
    args = ap.parse_args()
    import numpy as np
    import tokenizers

    t0 = time.time()
    with open(args.train, encoding="utf-8") as f:
        train_text = f.read()
    with open(args.valid, encoding="utf-8") as f:
        valid_text = f.read()
    tok, regex = build(train_text, lm.VOCAB_SIZE)
    special_ids = check(tok, regex)
    t_train = time.time() - t0

    os.makedirs(args.out, exist_ok=True)
    tok.save(os.path.join(args.out, "tokenizer.json"))
    added = {str(i): {"content": s, "lstrip": False, "normalized": False, "rstrip": False,
                      "single_word": False, "special": True}
             for s, i in zip(lm.SPECIALS, special_ids)}
    cfg = {"added_tokens_decoder": added, "bos_token": lm.BOS, "eos_token": lm.EOS,
           "chat_template": lm.CHAT_TEMPLATE, "clean_up_tokenization_spaces": True,
           "model_input_names": ["input_ids", "attention_mask"],
           "model_max_length": lm.MAX_POS, "tokenizer_class": "PreTrainedTokenizerFast"}
    with open(os.path.join(args.out, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f, indent=2, ensure_ascii=False)
    with open(os.path.join(args.out, "special_tokens_map.json"), "w") as f:
        json.dump({"bos_token": lm.BOS, "eos_token": lm.EOS}, f, indent=2)

    # Reload what was written: the files, not the object, are what ships.
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(args.out, "tokenizer.json"))
    check(tok, regex)
    t0 = time.time()
    valid_ids = tok.encode(valid_text, add_special_tokens=False).ids
    train_ids = tok.encode(train_text, add_special_tokens=False).ids
    t_enc = time.time() - t0
    assert tok.decode(valid_ids, skip_special_tokens=False) == valid_text, "decode(encode) differs"
    assert max(train_ids) < special_ids[0] and max(valid_ids) < special_ids[0]
    with open(args.valid_ids, "w") as f:
        f.write("".join(f"{i}\n" for i in valid_ids))
    np.save(args.train_ids, np.asarray(train_ids, dtype=np.uint16))

    summary = {
        "tokenizers": tokenizers.__version__, "vocab_size": tok.get_vocab_size(),
        "special_ids": dict(zip(lm.SPECIALS, special_ids)),
        "n_merges": len(json.loads(tok.to_str())["model"]["merges"]),
        "train_bytes": len(train_text.encode()), "train_tokens": len(train_ids),
        "valid_bytes": len(valid_text.encode()), "valid_tokens": len(valid_ids),
        "bytes_per_token_valid": len(valid_text.encode()) / len(valid_ids),
        "train_seconds": round(t_train, 2), "encode_seconds": round(t_enc, 2),
        "sample": tok.encode("In the beginning God created the heaven and the earth.").tokens,
    }
    print(json.dumps(summary, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
