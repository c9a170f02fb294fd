#!/usr/bin/env python3
"""Throughput of `layerstream serve` under C concurrent streaming clients.

Each client sends one /v1/completions request with a prompt of token ids
(bos, then a fixed pseudo-random walk: the prompts of `bench --batch`),
greedy, a fixed length (ignore_eos), stream: true. The decode rate is
counted the way `bench --batch` counts it: over the window in which every
stream decodes (every request in flight and none still waiting for its
first token, to the first one's end), from the server's own counters
(/metrics, polled every 0.02 s, so that a run of a fraction of a second
still has a window): the text pieces of a stream are no count of
its tokens (a synthetic vocabulary's pieces are often incomplete UTF-8,
held back and sent later together). Time to first text and the gaps
between text chunks come from the clients' clocks.

Python's standard library only (the GPU machine has no package registry).

  scripts/serve_load.py URL CLIENTS PROMPT_TOKENS MAX_TOKENS VOCAB [OUT.json]
"""
import http.client
import json
import sys
import threading
import time
import urllib.parse


def bos_id(url):
    # The model's BOS: /tokenize of no text with the special tokens it adds.
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    c.request("POST", "/tokenize", json.dumps({"content": "", "add_special": True}),
              {"Content-Type": "application/json"})
    ids = json.loads(c.getresponse().read())["tokens"]
    return ids[0] if ids else 0


def prompt_ids(prompt_tokens, vocab, w, bos):
    # tools/cmd_bench.cpp's walk: token i of sequence w.
    return [bos] + [(1000003 * i + 12345 + 7919 * w) % vocab for i in range(1, prompt_tokens)]


def stream(url, body, out):
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=3600)
    t0 = time.monotonic()
    c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    out["status"] = r.status
    times, buf, done = [], b"", False
    if r.status != 200:
        out["body"] = r.read().decode(errors="replace")
        return
    while True:
        line = r.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data: "):
            continue
        data = line[6:]
        if data == b"[DONE]":
            done = True
            break
        j = json.loads(data)
        if "error" in j:
            out["body"] = data.decode()
            out["status"] = 599
            return
        if j.get("choices") and j["choices"][0].get("text"):
            times.append(time.monotonic())
        if j.get("usage"):
            out["completion_tokens"] = j["usage"]["completion_tokens"]
    out.update(t0=t0, times=times, done=done)


def counters(url):
    # (tokens generated, requests in flight, requests waiting for a first token)
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    c.request("GET", "/metrics")
    got = {}
    for line in c.getresponse().read().decode().splitlines():
        name, _, value = line.partition(" ")
        got[name] = float(value) if value and not name.startswith("#") else None
    names = ("layerstream_tokens_generated_total", "layerstream_requests_in_flight",
             "layerstream_requests_waiting")
    missing = [n for n in names if got.get(n) is None]
    if missing:
        raise RuntimeError("not in /metrics: " + ", ".join(missing))
    return tuple(got[n] for n in names)


def pct(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, int(p / 100 * len(s)))] if s else 0.0


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    try:
        url, clients, prompt_tokens, max_tokens, vocab = sys.argv[1], *map(int, sys.argv[2:6])
    except ValueError as e:
        sys.exit(f"serve_load.py: CLIENTS PROMPT_TOKENS MAX_TOKENS VOCAB must be integers ({e})")
    if min(clients, prompt_tokens, max_tokens, vocab) < 1:
        sys.exit("serve_load.py: CLIENTS PROMPT_TOKENS MAX_TOKENS VOCAB must be at least 1")
    out_path = sys.argv[6] if len(sys.argv) > 6 else None
    samples, stop = [], threading.Event()

    def poll():
        while not stop.is_set():
            samples.append((time.monotonic(), *counters(url)))
            time.sleep(0.02)

    try:
        bos = bos_id(url)
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"serve_load.py: no layerstream server answering POST /tokenize at {url}: {e}")
    results = [dict() for _ in range(clients)]
    threads = [threading.Thread(target=stream, args=(url, {
        "prompt": prompt_ids(prompt_tokens, vocab, w, bos), "max_tokens": max_tokens,
        "temperature": 0, "stream": True, "ignore_eos": True,
        "stream_options": {"include_usage": True}}, results[w])) for w in range(clients)]
    poller = threading.Thread(target=poll)
    poller.start()
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    poller.join()
    wall = time.monotonic() - start
    bad = [r for r in results if r.get("status") != 200 or not r.get("done")]
    for r in bad:
        print("FAIL:", r.get("status"), r.get("body", "stream did not end with [DONE]"))
    if bad:
        sys.exit(1)
    # The window in which every stream decodes, and the server's count over it.
    inside = [s for s in samples if s[2] == clients and s[3] == 0]
    rate = ((inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])
            if len(inside) >= 2 and inside[-1][0] > inside[0][0] else 0.0)
    w0, w1 = (inside[0][0], inside[-1][0]) if inside else (0.0, 0.0)
    timed = [r for r in results if r["times"]]
    ttft = [r["times"][0] - r["t0"] for r in timed]
    itl = [b - a for r in timed for a, b in zip(r["times"], r["times"][1:])]
    tokens = sum(r.get("completion_tokens", 0) for r in results)
    summary = {
        "clients": clients, "prompt_tokens": prompt_tokens, "max_tokens": max_tokens,
        "completed": len(results), "tokens": tokens, "wall_s": wall,
        "tok_s_all_in": tokens / wall, "decode_window_s": w1 - w0,
        "decode_tok_s": rate, "window_samples": len(inside),
        "first_text_p50_s": pct(ttft, 50), "first_text_p99_s": pct(ttft, 99),
        "text_gap_p50_s": pct(itl, 50), "text_gap_p99_s": pct(itl, 99),
    }
    print(json.dumps(summary, indent=1))
    if out_path:
        with open(out_path, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
