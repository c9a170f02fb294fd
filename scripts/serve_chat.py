#!/usr/bin/env python3
"""A multi-turn chat against `layerstream serve`, as OpenAI clients run one.

Each turn appends a user message and sends the whole conversation to
/v1/chat/completions (greedy, streamed, MAX_TOKENS a turn, usage in the last
chunk), then appends the answer's text as the assistant's message. Per turn
it prints the prompt tokens, those the server took from its prompt cache
(usage.prompt_tokens_details.cached_tokens), the time to the first text and
the whole turn's time. CACHE off sends cache_prompt: false (every turn
computes the whole conversation), to set the two side by side.

Python's standard library only (the GPU machine has no package registry).

  scripts/serve_chat.py URL TURNS MAX_TOKENS on|off [SYSTEM_WORDS]
"""
import json
import sys
import time
import urllib.request


def turn(url, messages, max_tokens, cache):
    body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}, "cache_prompt": cache}
    req = urllib.request.Request(url.rstrip("/") + "/v1/chat/completions",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.time()
    first, text, usage = None, "", None
    with urllib.request.urlopen(req, timeout=600) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            j = json.loads(line[6:])
            if j.get("usage"):
                usage = j["usage"]
            for c in j.get("choices", []):
                piece = c.get("delta", {}).get("content")
                if piece:
                    if first is None:
                        first = time.time() - t0
                    text += piece
    return text, usage, first, time.time() - t0


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    url, turns, max_tokens, cache = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    words = int(sys.argv[5]) if len(sys.argv) > 5 else 100
    messages = [{"role": "system", "content": " ".join(["You answer with care."] * (words // 4))}]
    for t in range(turns):
        messages.append({"role": "user",
                         "content": f"Turn {t}: tell me what you know of the number {t}, at length."})
        text, usage, first, total = turn(url, messages, max_tokens, cache == "on")
        messages.append({"role": "assistant", "content": text})
        cached = usage.get("prompt_tokens_details", {}).get("cached_tokens", 0)
        ttft = f"{first * 1000:.0f} ms" if first is not None else "no text"
        print(f"turn {t}: prompt {usage['prompt_tokens']} tokens, cached {cached}, "
              f"first text {ttft}, turn {total * 1000:.0f} ms", flush=True)


if __name__ == "__main__":
    main()
