#!/usr/bin/env python3
"""Socket-level faults against `layerstream serve` (tests/serve/test_serve.sh
runs each): what curl and the OpenAI client cannot do on purpose. Each
subcommand prints one line saying what it saw and exits 0 when the server
behaved, 1 (with the reason) when it did not.

  faults.py PORT body100mb     a 100 MB body: 413 from the header, before the body is read
  faults.py PORT slowloris S   headers one byte every 0.5 s: cut off within S + 2 s
  faults.py PORT disconnect    leave mid-stream: /metrics shows the sequence and its blocks freed
  faults.py PORT busy          --parallel 1 --max-queue 1: two streams held, a third gets 429
  faults.py PORT connlimit N   N idle connections held, one more gets 503
"""
import json
import re
import socket
import sys
import time

HOST = "127.0.0.1"


def connect(port, timeout=10):
    s = socket.create_connection((HOST, port), timeout=timeout)
    return s


def post(path, body, extra=""):
    data = json.dumps(body).encode()
    head = (f"POST {path} HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n{extra}\r\n").encode()
    return head + data


def read_response(s):
    """A whole response (Content-Length bodies): (status, headers text, body)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    m = re.search(rb"content-length: *(\d+)", head, re.I)
    if m:
        n = int(m.group(1))
        while len(body) < n:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
    status = int(head.split(b" ")[1]) if head.startswith(b"HTTP/") else 0
    return status, head.decode(errors="replace"), body.decode(errors="replace")


def get(port, path):
    s = connect(port)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode())
    r = read_response(s)
    s.close()
    return r


def metric(text, name):
    m = re.search(r"^" + re.escape(name) + r" ([0-9.e+]+)$", text, re.M)
    return float(m.group(1)) if m else None


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def body100mb(port):
    n = 100 * 1000 * 1000
    s = connect(port)
    s.sendall((f"POST /v1/completions HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {n}\r\n\r\n").encode())
    # Send body bytes until the server answers or closes; it must answer
    # long before 100 MB have gone.
    sent = 0
    s.setblocking(False)
    buf = b""
    deadline = time.time() + 20
    zeros = b"0" * 65536
    while time.time() < deadline:
        try:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
            if b"\r\n\r\n" in buf and b"}}" in buf:
                break
        except BlockingIOError:
            pass
        except ConnectionResetError:
            break
        try:
            sent += s.send(zeros)
        except (BlockingIOError, BrokenPipeError, ConnectionResetError):
            time.sleep(0.01)
    s.close()
    text = buf.decode(errors="replace")
    if not text.startswith("HTTP/1.1 413"):
        fail("a 100 MB body: expected 413, got %r (after %d bytes sent)" % (text[:80], sent))
    if "100000000 bytes" not in text or "--max-body" not in text:
        fail("the 413 does not name the size and the limit: " + text)
    print("body100mb: 413 after %.1f MB of 100 sent: %s" % (sent / 1e6, text.split("\r\n\r\n", 1)[1]))


def slowloris(port, limit):
    s = connect(port, timeout=limit + 10)
    t0 = time.time()
    s.sendall(b"GET /health HTTP/1.1\r\n")
    line = b"X-Slow: " + b"a" * 200
    closed = False
    for b in line:
        try:
            s.sendall(bytes([b]))
        except (BrokenPipeError, ConnectionResetError):
            closed = True
            break
        s.settimeout(0.5)
        try:
            if s.recv(1024) == b"":
                closed = True
                break
        except socket.timeout:
            pass
        except ConnectionResetError:
            closed = True
            break
        if time.time() - t0 > limit + 5:
            break
    took = time.time() - t0
    s.close()
    if not closed:
        fail("a slow-loris client was still connected after %.1f s (--read-timeout %d)" % (took, limit))
    if took > limit + 2:
        fail("a slow-loris client was cut off only after %.1f s (--read-timeout %d)" % (took, limit))
    # The server still serves others.
    st, _, _ = get(port, "/health")
    if st != 200:
        fail("after the slow-loris client, /health answered %d" % st)
    print("slowloris: cut off after %.1f s (--read-timeout %d); the server still answers" % (took, limit))


def open_stream(port, max_tokens=-1, prompt="In the beginning"):
    s = connect(port, timeout=30)
    body = {"prompt": prompt, "stream": True, "temperature": 0}
    if max_tokens > 0:
        body["max_tokens"] = max_tokens
    s.sendall(post("/v1/completions", body))
    return s


def read_frames(s, n):
    """Reads until n SSE data frames have come (raw bytes, chunked encoding and all)."""
    buf = b""
    while buf.count(b"data: ") < n:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    return buf


def disconnect(port):
    s = open_stream(port)
    buf = read_frames(s, 3)
    if not buf.startswith(b"HTTP/1.1 200") or b"text/event-stream" not in buf:
        fail("the stream did not start: %r" % buf[:200])
    _, _, m = get(port, "/metrics")
    if (metric(m, "layerstream_requests_in_flight") or 0) < 1 or (metric(m, "layerstream_kv_blocks_used") or 0) < 1:
        fail("while streaming, /metrics shows no sequence in flight:\n" + m)
    s.close()  # leave mid-stream
    t0 = time.time()
    while time.time() - t0 < 5:
        _, _, m = get(port, "/metrics")
        cancelled = re.search(r'layerstream_requests_finished_total\{reason="cancelled"\} (\d+)', m)
        if (metric(m, "layerstream_requests_in_flight") == 0 and metric(m, "layerstream_kv_blocks_used") == 0
                and cancelled and int(cancelled.group(1)) >= 1):
            print("disconnect: sequence cancelled, in flight 0, kv blocks used 0 after %.0f ms (disconnects %d)"
                  % ((time.time() - t0) * 1000, metric(m, "layerstream_http_disconnects_total")))
            return
        time.sleep(0.02)
    fail("5 s after the client left, /metrics still shows its sequence:\n" + m)


def busy(port):
    held = [open_stream(port), open_stream(port)]
    read_frames(held[0], 1)  # the first runs; the second waits in the queue
    time.sleep(0.1)
    s = connect(port)
    s.sendall(post("/v1/completions", {"prompt": "x", "max_tokens": 1}))
    st, head, body = read_response(s)
    s.close()
    for h in held:
        h.close()
    if st != 429:
        fail("with the slot and the queue full, expected 429, got %d %s" % (st, body))
    err = json.loads(body)["error"]
    if "retry-after: 1" not in head.lower() or err["type"] != "rate_limit_error" or "--max-queue" not in err["message"]:
        fail("the 429 lacks Retry-After or a message naming the limit: %s %s" % (head, body))
    print("busy: 429 (%s)" % err["message"])


def connlimit(port, n):
    held = [connect(port) for _ in range(n)]
    time.sleep(0.2)
    s = connect(port)
    s.sendall(f"GET /health HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode())
    st, _, body = read_response(s)
    s.close()
    for h in held:
        h.close()
    if st != 503 or "--max-connections" not in body:
        fail("connection %d of %d allowed: expected 503 naming --max-connections, got %d %s" % (n + 1, n, st, body))
    time.sleep(0.2)
    st, _, _ = get(port, "/health")
    if st != 200:
        fail("once the held connections closed, /health answered %d" % st)
    print("connlimit: connection %d got 503; after they closed, 200 again" % (n + 1))


def main():
    port, what = int(sys.argv[1]), sys.argv[2]
    if what == "body100mb":
        body100mb(port)
    elif what == "slowloris":
        slowloris(port, int(sys.argv[3]))
    elif what == "disconnect":
        disconnect(port)
    elif what == "busy":
        busy(port)
    elif what == "connlimit":
        connlimit(port, int(sys.argv[3]))
    else:
        fail("unknown fault " + what)


if __name__ == "__main__":
    main()
