#!/usr/bin/env python3
"""The chat page in headless Chromium, driven over the DevTools protocol
(--remote-debugging-pipe: JSON messages on fds 3 and 4, no extra packages):
open GET /, type a message into the box and press Enter as a user would,
wait for the streamed reply to finish, check it against the API's own
greedy reply, and save a screenshot.

  page_check.py CHROMIUM URL EXPECTED_REPLY SCREENSHOT.png PROFILE_DIR
Prints the reply; exits 1 (saying why) if the page did not show it.
"""
import base64
import json
import os
import subprocess
import sys
import time

chromium, url, expected, shot, profile = sys.argv[1:6]

# Chromium reads commands from fd 3 and writes replies to fd 4.
to_child_r, to_child_w = os.pipe()
from_child_r, from_child_w = os.pipe()


def child_fds():
    os.dup2(to_child_r, 3)
    os.dup2(from_child_w, 4)


proc = subprocess.Popen(
    [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
     "--no-first-run", "--user-data-dir=" + profile, "--window-size=900,600",
     "--remote-debugging-pipe", "about:blank"],
    stdout=subprocess.DEVNULL, stderr=open(os.path.join(profile + ".log"), "w"),
    preexec_fn=child_fds, pass_fds=(3, 4))  # the numbers in the child, after child_fds
os.close(to_child_r)
os.close(from_child_w)
reader = os.fdopen(from_child_r, "rb")
next_id = 0
buffered = b""


def send(method, params=None, session=None):
    global next_id, buffered
    next_id += 1
    msg = {"id": next_id, "method": method, "params": params or {}}
    if session:
        msg["sessionId"] = session
    os.write(to_child_w, json.dumps(msg).encode() + b"\0")
    while True:
        while b"\0" not in buffered:
            chunk = reader.read1(65536)
            if not chunk:
                raise SystemExit("FAIL: chromium closed the pipe")
            buffered += chunk
        raw, _, buffered = buffered.partition(b"\0")
        reply = json.loads(raw)
        if reply.get("id") == next_id:
            if "error" in reply:
                raise SystemExit("FAIL: %s: %s" % (method, reply["error"]))
            return reply["result"]


def evaluate(session, expr):
    r = send("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True}, session)
    return r["result"].get("value")


try:
    target = send("Target.createTarget", {"url": url})["targetId"]
    session = send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    deadline = time.time() + 30
    while evaluate(session, "document.readyState") != "complete" or \
            not (evaluate(session, "document.getElementById('model').textContent") or "").startswith("layerstream"):
        if time.time() > deadline:
            raise SystemExit("FAIL: the page did not load its model line")
        time.sleep(0.05)
    # A user types and presses Enter.
    evaluate(session, """
      document.getElementById('temp').value = '0';
      document.getElementById('maxtok').value = '24';
      const box = document.getElementById('input');
      box.value = 'In the beginning God created';
      box.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}));
      true""")
    states = set()
    while True:
        state = evaluate(session, "document.body.dataset.state")
        states.add(state)
        if state in ("done", "error"):
            break
        if time.time() > deadline:
            raise SystemExit("FAIL: the reply did not finish (state %s)" % state)
        time.sleep(0.01)
    reply = evaluate(session, "document.querySelector('.msg.assistant').firstChild.textContent")
    meta = evaluate(session, "(document.querySelector('.msg .meta') || {}).textContent")
    png = send("Page.captureScreenshot", {"format": "png"}, session)["data"]
    with open(shot, "wb") as f:
        f.write(base64.b64decode(png))
    if state != "done":
        raise SystemExit("FAIL: the page shows an error: %s" % evaluate(session, "document.querySelector('.msg.error').textContent"))
    if reply.strip() != expected.strip():
        raise SystemExit("FAIL: the page's reply %r is not the API's %r" % (reply, expected))
    print("page: reply %r (%s); states seen %s; screenshot %s" % (reply.strip(), meta, sorted(s for s in states if s), shot))
finally:
    try:
        send("Browser.close")
    except BaseException:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
