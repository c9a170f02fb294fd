#include "model/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "kernels/cpu/q8_chunks.h"
#include "kernels/ref/quant.h"

namespace ls {

CpuBackend::CpuBackend(const LlamaConfig& c, const GlobalView& g, uint32_t n_ctx, uint32_t n_seq,
                       KvType kv_type, int n_threads, CpuAct act, const CpuMatmulTuning& tune,
                       uint32_t kv_blocks, std::shared_ptr<ThreadPool> pool)
    : c_(c),
      g_(g),
      kv_(c.n_layer, n_seq, n_ctx, c.n_head_kv, c.head_dim, kv_type, kv_blocks),
      pool_(pool && pool->size() == std::max(1, n_threads)
                ? std::move(pool)
                : std::make_shared<ThreadPool>(n_threads)),
      act_(act),
      tune_(tune) {
  rope_.n_rot = static_cast<int32_t>(c.n_rot);
  rope_.freq_base = c.rope_freq_base;
  rope_.freq_scale = c.rope_freq_scale;
  rope_.freq_factors = g.rope_freqs;
  // LS_CPU_PIN=1 pins the pool's threads one a CPU (ThreadPool::pin): an
  // A/B switch, off by default (the actors' threads share these cores).
  if (const char* e = std::getenv("LS_CPU_PIN"); e && std::atoi(e) > 0 && !pool_->pin())
    std::fprintf(stderr, "LS_CPU_PIN: cannot pin %d threads one a CPU here (fewer CPUs allowed)\n",
                 pool_->size());
  scratch_.resize(pool_->size());
  for (auto& s : scratch_) s.resize(std::max<size_t>(c.n_embd, c.n_ff));
  // Rows are at most n_ff long (w_down) or n_embd (everything else).
  mm_scratch_.reserve(pool_->size(), std::max<int64_t>(c.n_embd, c.n_ff));
  // The int8 arithmetic of the K-quants (kernels/cpu/q8_chunks.h), one for
  // the whole run so that every width computes the same bits.
  mm_scratch_.act().set_chunks(cpu_q8_chunks_active());
  // Attention: a one-token step at the full context (a larger split batch
  // grows it once, on its first call).
  const int64_t blocks = attention_cpu_max_blocks(n_ctx);
  attn_scratch_.reserve(pool_->size(), static_cast<int>(c.n_head / c.n_head_kv),
                        static_cast<int>(c.head_dim), c.n_head_kv, c.n_head_kv * blocks);
  // LS_ATTN_SHARE=n: tokens of one sequence that read a block together at
  // most (AttnCpuTuning::share; 1: each alone): an A/B switch, the same bits.
  if (const char* e = std::getenv("LS_ATTN_SHARE"); e && std::atoi(e) > 0)
    attn_tune_.share = std::atoi(e);
}

void CpuBackend::matmul(const WeightView& w, const float* x, int64_t n_tok, float* y) {
  if (!matmul_cpu_supports(w) || w.n_in > mm_scratch_.max_n_in()) {
    matmul_f32(*pool_, w, x, n_tok, y, scratch_);
  } else if (act_ == CpuAct::F32) {
    matmul_cpu(*pool_, w, x, n_tok, y, mm_scratch_);
  } else {
    const MatmulQ8Part part{w, y};
    matmul_cpu_q8_auto(*pool_, &part, 1, matmul_cpu_quantize(*pool_, x, n_tok, w.n_in, mm_scratch_),
                       n_tok, mm_scratch_, cpu_isa_active(), tune_);
  }
}

bool CpuBackend::takes_q8(std::initializer_list<MatmulQ8Part> parts) const {
  if (act_ != CpuAct::Q8) return false;
  for (const MatmulQ8Part& p : parts)
    if (!matmul_cpu_supports(p.w) || p.w.n_in > mm_scratch_.max_n_in() ||
        p.w.n_in != parts.begin()->w.n_in)
      return false;
  return true;
}

void CpuBackend::matmuls(const float* x, int64_t n_tok, std::initializer_list<MatmulQ8Part> parts,
                         const ActQ8View* xq) {
  if (!takes_q8(parts)) {
    for (const MatmulQ8Part& p : parts) matmul(p.w, x, n_tok, p.y);
    return;
  }
  const ActQ8View v =
      xq ? *xq : matmul_cpu_quantize(*pool_, x, n_tok, parts.begin()->w.n_in, mm_scratch_);
  matmul_cpu_q8_auto(*pool_, parts.begin(), static_cast<int>(parts.size()), v, n_tok, mm_scratch_,
                     cpu_isa_active(), tune_);
}

void CpuBackend::swiglu(int64_t n_tok, bool quantize) {
  // Blocks of 32 values, a few ranges per thread: the activation function and
  // the quantizer are cheap per value, but 28672 values a token on one
  // thread would idle the other fifteen for tens of microseconds a layer.
  // Ranges of whole chunks of 8 blocks where the chunk form quantizes too.
  ActQ8Buffer& act = mm_scratch_.act();
  const int64_t unit = act.chunks() && c_.n_ff % 256 == 0 ? 8 : 1;
  const int64_t nu = n_tok * c_.n_ff / kActQ8Block / unit;
  const int64_t n_tasks = std::min<int64_t>(nu, 4 * pool_->size());
  pool_->run(n_tasks, [&](int64_t task, int) {
    const int64_t b0 = nu * task / n_tasks * unit, b1 = nu * (task + 1) / n_tasks * unit;
    const int64_t i0 = b0 * kActQ8Block, len = (b1 - b0) * kActQ8Block;
    silu_mul_f32(gate_.data() + i0, up_.data() + i0, gate_.data() + i0, len);
    if (quantize) quantize_act_q8_cpu_blocks(gate_.data(), c_.n_ff, b0, b1, act);
  });
}

void CpuBackend::reserve(size_t n) {
  if (n <= cap_) return;
  cap_ = n;
  h_.resize(n * c_.n_embd);
  xn_.resize(n * c_.n_embd);
  q_.resize(n * c_.n_embd);
  k_.resize(n * c_.n_embd_kv());
  v_.resize(n * c_.n_embd_kv());
  att_.resize(n * c_.n_embd);
  o_.resize(n * c_.n_embd);
  gate_.resize(n * c_.n_ff);
  up_.resize(n * c_.n_ff);
  // The 8-bit inputs and the GEMM's panel, sized once per batch size
  // (nothing allocated per call).
  const int64_t n_in = std::max<int64_t>(c_.n_embd, c_.n_ff);
  mm_scratch_.act().reserve(static_cast<int64_t>(n), n_in);
  const int64_t n_tok = static_cast<int64_t>(n);
  if (n_tok >= gemm_q8_min_tokens(cpu_isa_active())) {
    // The largest plan of a layer's matmuls: rows of n_embd or n_ff values.
    for (int64_t len : {static_cast<int64_t>(c_.n_embd), static_cast<int64_t>(c_.n_ff)}) {
      const GemmQ8Plan pl = gemm_q8_plan(cpu_isa_active(), pool_->size(), n_tok, len,
                                         std::max<int64_t>(c_.n_embd, c_.n_ff));
      mm_scratch_.gemm().reserve(pool_->size(), pl.tile_chunks, n_tok * gemm_q8_chunks(len));
    }
  }
}

// The batch's entries; its block table is kv_'s (check_batch took it), not
// copied again (the CPU tier gets the batch once per layer).
void CpuBackend::take_entries(const Batch& b) {
  batch_.token = b.token;
  batch_.pos = b.pos;
  batch_.seq = b.seq;
  batch_.logits = b.logits;
}

Status CpuBackend::export_hidden(float* h) {
  std::copy(h_.begin(), h_.begin() + static_cast<ptrdiff_t>(batch_.size() * c_.n_embd), h);
  return ok();
}

Status CpuBackend::import_hidden(const Batch& b, const float* h) {
  LS_TRY(check_batch(b));
  take_entries(b);
  reserve(b.size());
  std::copy(h, h + b.size() * c_.n_embd, h_.begin());
  return ok();
}

namespace {
// Blocks slot s holds (for messages).
uint32_t held_blocks(const KvCache& kv, uint32_t s) {
  uint32_t n = 0;
  for (uint32_t b = 0; b < kv.max_blocks(); ++b)
    n += kv.table()[static_cast<size_t>(s) * kv.max_blocks() + b] >= 0;
  return n;
}
}  // namespace

Status CpuBackend::check_batch(const Batch& b) {
  // The CPU tier's backend gets the same batch for each of its layers: the
  // table is taken once (compared first: a few KiB).
  if (!b.kv_table.empty() && b.kv_table != kv_.table()) LS_TRY(kv_.set_table(b.kv_table));
  for (size_t t = 0; t < b.size(); ++t) {
    if (b.token[t] < 0 || static_cast<uint32_t>(b.token[t]) >= c_.n_vocab)
      return make_error("token id %d is outside the vocabulary (%u)", b.token[t], c_.n_vocab);
    if (b.pos[t] < 0 || static_cast<uint32_t>(b.pos[t]) >= kv_.n_ctx())
      return make_error("position %d is outside the context (%u)", b.pos[t], kv_.n_ctx());
    if (b.seq[t] < 0 || static_cast<uint32_t>(b.seq[t]) >= kv_.n_seq())
      return make_error("sequence %d is outside the %u sequence slots", b.seq[t], kv_.n_seq());
    const uint32_t s = static_cast<uint32_t>(b.seq[t]), p = static_cast<uint32_t>(b.pos[t]);
    if (!kv_.holds(s, p, p + 1))
      return make_error(
          "position %u of sequence %u has no key/value block (the table gives it %u of the "
          "pool's %u blocks)",
          p, s, held_blocks(kv_, s), kv_.n_blocks());
  }
  return ok();
}

Status CpuBackend::begin(const Batch& b) {
  LS_TRY(check_batch(b));
  take_entries(b);
  reserve(b.size());
  const uint64_t row_bytes = ggml_row_bytes(g_.token_embd.type, c_.n_embd);
  for (size_t t = 0; t < b.size(); ++t) {
    const uint8_t* row = static_cast<const uint8_t*>(g_.token_embd.data) + b.token[t] * row_bytes;
    dequantize_row(g_.token_embd.type, row, h_.data() + t * c_.n_embd, c_.n_embd);
  }
  return ok();
}

Status CpuBackend::layer(uint32_t il, const LayerView& w) {
  const int64_t n = static_cast<int64_t>(batch_.size());
  const int64_t E = c_.n_embd, KV = c_.n_embd_kv(), HD = c_.head_dim;
  float* h = h_.data();
  float* xn = xn_.data();
  const float* o = o_.data();

  // Attention block. The per-token steps (norms, RoPE and the KV store, the
  // residual adds) run a token a task: on one thread they took 0.5 ms of a
  // 70b CPU-tier layer's 8.8 at 8 tokens (LS_CPU_OP_TIMES, session 38), the
  // same bits either way.
  op_times_.start(n);
  per_token(n, [&](int64_t t) { rmsnorm_f32(h + t * E, w.attn_norm, xn + t * E, E, c_.rms_eps); });
  op_times_.lap(CpuOp::Norm);
  matmuls(xn, n, {{w.wq, q_.data()}, {w.wk, k_.data()}, {w.wv, v_.data()}});
  op_times_.lap(CpuOp::Qkv);
  per_token(n, [&](int64_t t) {
    rope_f32(q_.data() + t * E, c_.n_head, HD, batch_.pos[t], rope_);
    rope_f32(k_.data() + t * KV, c_.n_head_kv, HD, batch_.pos[t], rope_);
    kv_.store(il, batch_.seq[t], batch_.pos[t], k_.data() + t * KV, v_.data() + t * KV);
  });
  op_times_.lap(CpuOp::RopeKv);
  // Each key/value head read once per token for its whole GQA group, in
  // place (f16 converted in registers), over all the pool's threads.
  AttnArgs at;
  at.n_head = static_cast<int>(c_.n_head);
  at.n_head_kv = static_cast<int>(c_.n_head_kv);
  at.head_dim = static_cast<int>(HD);
  at.scale = 1.0f / std::sqrt(static_cast<float>(HD));
  at.n_tok = n;
  at.pos = batch_.pos.data();
  at.seq = batch_.seq.data();
  at.q = q_.data();
  at.ldq = E;
  at.out = att_.data();
  at.ldo = E;
  at.kv = kv_.attn(il);
  attention_cpu(*pool_, at, attn_scratch_, cpu_isa_active(), attn_tune_);
  op_times_.lap(CpuOp::Attention);
  matmuls(att_.data(), n, {{w.wo, o_.data()}});
  op_times_.lap(CpuOp::Wo);

  // Feed-forward block: h += attention's output and its norm, a token a task.
  per_token(n, [&](int64_t t) {
    for (int64_t i = t * E; i < (t + 1) * E; ++i) h[i] += o[i];
    rmsnorm_f32(h + t * E, w.ffn_norm, xn + t * E, E, c_.rms_eps);
  });
  op_times_.lap(CpuOp::Norm);
  matmuls(xn, n, {{w.w_gate, gate_.data()}, {w.w_up, up_.data()}});
  op_times_.lap(CpuOp::GateUp);
  // The 8-bit input of w_down comes out of the same pass as swiglu.
  const bool q8_down = takes_q8({{w.w_down, o_.data()}});
  swiglu(n, q8_down);
  op_times_.lap(CpuOp::Swiglu);
  const ActQ8View gate_q = mm_scratch_.act().view(c_.n_ff);
  matmuls(gate_.data(), n, {{w.w_down, o_.data()}}, q8_down ? &gate_q : nullptr);
  op_times_.lap(CpuOp::Down);
  per_token(n, [&](int64_t t) {
    for (int64_t i = t * E; i < (t + 1) * E; ++i) h[i] += o[i];
  });
  op_times_.lap(CpuOp::Add);
  return ok();
}

Status CpuBackend::finish(float* logits) {
  const int64_t E = c_.n_embd;
  int64_t m = 0;
  for (size_t t = 0; t < batch_.size(); ++t) {
    if (!batch_.logits[t]) continue;
    rmsnorm_f32(h_.data() + t * E, g_.output_norm, xn_.data() + m * E, E, c_.rms_eps);
    ++m;
  }
  if (m > 0) matmuls(xn_.data(), m, {{g_.output, logits}});
  return ok();
}

// Rows outside the cache are a caller's bug; say which.
static Status check_kv_rows(const KvCache& kv, uint32_t layer, int32_t seq, uint32_t p0,
                            uint32_t p1, uint32_t n_layer) {
  if (layer >= n_layer || seq < 0 || static_cast<uint32_t>(seq) >= kv.n_seq() || p0 > p1 ||
      p1 > kv.n_ctx())
    return make_error("cpu: key/value rows %u..%u of layer %u, sequence %d are outside the cache",
                      p0, p1, layer, seq);
  if (!kv.holds(static_cast<uint32_t>(seq), p0, p1))
    return make_error("cpu: key/value rows %u..%u of sequence %d are not all in blocks", p0, p1,
                      seq);
  return ok();
}

Status CpuBackend::read_kv(uint32_t layer, int32_t seq, uint32_t p0, uint32_t p1, float* k,
                           float* v) {
  const KvRowSpan one{seq, p0, p1, k, v};
  return read_kv_spans(layer, &one, 1);
}

Status CpuBackend::write_kv(uint32_t layer, int32_t seq, uint32_t p0, uint32_t p1, const float* k,
                            const float* v) {
  const KvRowSpan one{seq, p0, p1, const_cast<float*>(k), const_cast<float*>(v)};
  return write_kv_spans(layer, &one, 1);
}

Status CpuBackend::read_kv_spans(uint32_t layer, const KvRowSpan* s, size_t n) {
  for (size_t i = 0; i < n; ++i)
    LS_TRY(check_kv_rows(kv_, layer, s[i].seq, s[i].p0, s[i].p1, c_.n_layer));
  kv_rows_split(s, n, [&](const KvRowSpan& r, uint32_t a, uint32_t b) {
    const uint64_t at = uint64_t{a - r.p0} * kv_.n_embd_kv();
    kv_.read_rows(layer, static_cast<uint32_t>(r.seq), a, b, r.k + at, r.v + at);
  });
  return ok();
}

Status CpuBackend::write_kv_spans(uint32_t layer, const KvRowSpan* s, size_t n) {
  for (size_t i = 0; i < n; ++i)
    LS_TRY(check_kv_rows(kv_, layer, s[i].seq, s[i].p0, s[i].p1, c_.n_layer));
  kv_rows_split(s, n, [&](const KvRowSpan& r, uint32_t a, uint32_t b) {
    const uint64_t at = uint64_t{a - r.p0} * kv_.n_embd_kv();
    kv_.write_rows(layer, static_cast<uint32_t>(r.seq), a, b, r.k + at, r.v + at);
  });
  return ok();
}

// Rows moved between the caches (a CPU-tier layer changing sides) go over
// the pool in runs of positions, every sequence's in one pool job. On one
// thread (the f16 conversion, the keys' tiled scatter, the page faults of
// rows written for the first time) a 70b layer's first run on the CPU after
// a wide step took about 20 ms more than its next, at 32 sequences of 128
// positions (session 45's trace), on the chain, once per layer that changes
// side. Each position is written by one task, so the bits do not depend on
// the split.
void CpuBackend::kv_rows_split(const KvRowSpan* s, size_t n,
                               const std::function<void(const KvRowSpan&, uint32_t, uint32_t)>& f) {
  // Positions a task: a key tile's (kAttnKTile), aligned as the tiles are,
  // so no two tasks write one tile's lines.
  constexpr uint32_t kRun = kAttnKTile;
  auto runs = [&](const KvRowSpan& r) -> int64_t {
    return r.p1 > r.p0 ? (r.p1 - r.p0 / kRun * kRun + kRun - 1) / kRun : 0;
  };
  int64_t tasks = 0;
  for (size_t i = 0; i < n; ++i) tasks += runs(s[i]);
  if (tasks <= 1 || pool_->size() <= 1) {
    for (size_t i = 0; i < n; ++i)
      if (s[i].p1 > s[i].p0) f(s[i], s[i].p0, s[i].p1);
    return;
  }
  pool_->run(tasks, [&](int64_t t, int) {
    size_t i = 0;  // the span of task t (a few dozen spans: a scan)
    while (t >= runs(s[i])) t -= runs(s[i++]);
    const KvRowSpan& r = s[i];
    const uint32_t a = r.p0 / kRun * kRun + static_cast<uint32_t>(t) * kRun;
    f(r, std::max(r.p0, a), std::min(r.p1, a + kRun));
  });
}

}  // namespace ls
