// Load on `layerstream serve`: C concurrent streaming clients, N requests in
// all (each client sends its next when its stream ends), greedy, over a few
// prompts. Every stream's text must equal the same request run alone
// (nothing lost or mixed between sequences of a batch), no answer may be a
// 5xx, and the time to first token and the inter-token latency are
// reported (p50, p99, max), as is the throughput.
//   node load.mjs URL CLIENTS REQUESTS MAX_TOKENS [OUT.json]
// Raw fetch and SSE parsing (Node 18+), so the timings are the wire's.
import { writeFileSync } from "node:fs";

const [url, clients, requests, maxTokens, out] = [process.argv[2], +process.argv[3], +process.argv[4], +process.argv[5], process.argv[6]];
const prompts = [
  "In the beginning", "And God said", "The LORD is my shepherd", "Blessed are the poor in spirit",
  "And it came to pass", "Now the serpent was more subtil", "For God so loved the world", "Thou shalt not",
];

// One streamed completion: its text, its chunks' arrival times, its status.
async function stream(prompt) {
  const t0 = performance.now();
  const r = await fetch(url + "/v1/completions", {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ prompt, max_tokens: maxTokens, temperature: 0, stream: true }),
  });
  if (!r.ok) return { status: r.status, body: await r.text() };
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  let buf = "", text = "", times = [], done = false, finish = null;
  for (;;) {
    const { value, done: end } = await reader.read();
    if (end) break;
    buf += dec.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const frame = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      if (!frame.startsWith("data: ")) continue;
      const data = frame.slice(6);
      if (data === "[DONE]") { done = true; continue; }
      const j = JSON.parse(data);
      if (j.error) return { status: 599, body: data };
      const c = j.choices[0];
      if (c.text) { text += c.text; times.push(performance.now()); }
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { status: done ? 200 : 598, text, t0, times, finish };
}

function pct(xs, p) {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

// Each prompt alone first: the reference.
const alone = {};
for (const p of prompts) {
  const r = await stream(p);
  if (r.status !== 200) { console.log(`FAIL: alone "${p}": ${r.status} ${r.body}`); process.exit(1); }
  alone[p] = r.text;
}

let next = 0, fivexx = 0, other = 0, mismatched = 0, tokens = 0;
const ttft = [], itl = [];
const t0 = performance.now();
async function client() {
  while (next < requests) {
    const i = next++;
    const p = prompts[i % prompts.length];
    const r = await stream(p);
    if (r.status >= 500) { fivexx++; console.log(`5xx: request ${i}: ${r.status} ${r.body}`); continue; }
    if (r.status !== 200) { other++; console.log(`error: request ${i}: ${r.status} ${r.body}`); continue; }
    if (r.text !== alone[p]) { mismatched++; console.log(`MISMATCH: request ${i} "${p}": "${r.text}" vs alone "${alone[p]}"`); }
    if (r.times.length) {
      ttft.push(r.times[0] - r.t0);
      for (let k = 1; k < r.times.length; ++k) itl.push(r.times[k] - r.times[k - 1]);
    }
    tokens += r.times.length;
  }
}
await Promise.all(Array.from({ length: clients }, client));
const wall = (performance.now() - t0) / 1000;
const res = {
  clients, requests, max_tokens: maxTokens, wall_s: +wall.toFixed(3),
  status_5xx: fivexx, status_other: other, mismatched,
  chunks: tokens, chunks_per_s: +(tokens / wall).toFixed(1),
  ttft_ms: { p50: +pct(ttft, 50).toFixed(1), p99: +pct(ttft, 99).toFixed(1), max: +Math.max(...ttft).toFixed(1) },
  itl_ms: { p50: +pct(itl, 50).toFixed(2), p99: +pct(itl, 99).toFixed(2), max: +Math.max(...itl).toFixed(2) },
};
console.log(JSON.stringify(res));
if (out) writeFileSync(out, JSON.stringify(res, null, 2) + "\n");
if (fivexx || other || mismatched) { console.log("FAIL: load"); process.exit(1); }
console.log(`PASS: load: ${requests} requests by ${clients} clients in ${wall.toFixed(2)} s, every stream equal to its request alone, no 5xx; ` +
  `TTFT p50 ${res.ttft_ms.p50} ms p99 ${res.ttft_ms.p99} ms; inter-token p50 ${res.itl_ms.p50} ms p99 ${res.itl_ms.p99} ms`);
