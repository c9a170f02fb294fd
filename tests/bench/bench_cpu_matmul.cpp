// bench_cpu_matmul: the CPU compute tier's matmul (kernels/cpu/matmul_cpu,
// kernels/cpu/gemm_q8) at the Llama 70B (or 1B, 8B) shapes and at widths
// from one token to a prompt, against this machine's roofline measured in
// the same run: the host memory bandwidth (runtime/probe_host: a
// multi-threaded read of a 2 GiB buffer, median of 5, per thread count) and
// the peak rate of the kernels' multiply instruction (tests/bench/
// bench_peak.h: vpmaddubsw on AVX2, vpdpbusd on AVX-512 VNNI, FMA for f32,
// on every thread at once).
//
// Per type (Q4_K, Q5_K, Q6_K, Q8_0, Q4_0), shape (n_in x n_out in ggml
// order: 8192x8192 wq/wo, 8192x28672 gate/up, 28672x8192 down, 8192x1024
// wk/wv), token count, thread count, ISA variant and path: GB/s of weight
// bytes read and GFLOP/s (2 n_in n_out n_tok per call; median, min, max of
// --reps calls after one warm-up), and the ratio to the roofline:
//     bound time = max(weight bytes / host GB/s, products / peak rate)
//     ratio      = bound time / median time
// (the "bound" column says which term is larger: mem, i8 or f32). Each call
// reads a different slice of a weight buffer of at least --weights-gib (4
// GiB), so shapes come from DRAM, as a real layer's weights do, not from the
// last-level cache (512 MB was not enough on the GPU machine, whose L3 held
// part of it: ratios above 1).
// Weights are random bytes with finite fp16 scales (the speed does not
// depend on the values; quantizing 235M floats would take minutes).
//
// Activations (--act): f32 (matmul_cpu: exact products) and q8 (x quantized,
// then int8 products: matmul_cpu_quantize and the product, both inside the
// timed call, as the engine runs them). The q8 product has two paths
// (--path): dot, the row-by-row dot (matmul_cpu_q8, made for decode), and
// gemm, the tiled GEMM (gemm_q8_parts, made for prompts); the CPU backend
// picks gemm from gemm_q8_min_tokens tokens on (same bits either way). For
// q8 the sweeps below show what else limits the machine:
//   --mem anon,huge,file  where the weights live: anonymous memory as the
//       system gives it, anonymous with MADV_HUGEPAGE (2 MiB pages), or a
//       file in the page cache mapped read-only (4 KiB pages, as a mapped
//       GGUF model is read; the file is written under --file-dir)
//   --tasks 4,16          row chunks per thread and matmul (dot)
//   --pf 0,1,2            rows ahead that a thread prefetches (0: none; dot)
//   --hint 0,1,2,3        cache level of the prefetch (t0, t1, t2, nta; dot)
//   --panel-kib 64,256    a token block's x panel (gemm; 0: half of L2)
//   --amx off,on          gemm on the ISA's tile kernel, on AMX's tile unit
//       (kernels/cpu/gemm_q8_amx.h; "on" where the CPU has it; its bound is
//       the memory's alone: no peak of the tile unit is measured)
//   --avx-vnni on,off     gemm on the AVX2 tile with AVX-VNNI's vpdpbusd
//       (where the CPU has it; the default) or with maddubs (--isa avx2)
//   --direct off,on       gemm through the direct tile (no weight pack;
//       AVX-512 VNNI, at most 8 tokens, the types it takes; kernels/cpu/
//       gemm_q8_direct_avx512.cpp)
//   --form lanes,chunks   the int8 arithmetic: the lane form (kernels/cpu/
//       q8_lanes.h) or the K-quants' chunk form (kernels/cpu/q8_chunks.h:
//       its dot, and its GEMM on the tile unit only)
//   --shapes 70b|8b|1b|l2 the model's matmul shapes; l2: one 8192 x 256
//       matrix (with --weights-gib 0, the kernel's compute rate from L2)
//
// Usage: ls_bench_cpu_matmul [--threads 1,2] [--ntok 1,8] [--isa best|all|avx512,...]
//          [--types q4_k,...] [--act q8,f32] [--path dot,gemm] [--mem anon] [--tasks 4]
//          [--pf 1] [--panel-kib 0] [--shapes 70b] [--file-dir /tmp] [--reps 9]
//          [--host-bytes-gib 2] [--weights-gib 4] [--ref] [--json out.json]
// --ref adds the reference matmul_f32 (dequantize a row, f32 dot) at n_tok 1.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "io/ggml_type.h"
#include "kernels/cpu/dot_q8.h"
#include "kernels/cpu/gemm_q8.h"
#include "kernels/cpu/dot_q8c.h"
#include "kernels/cpu/gemm_q8_amx.h"
#include "kernels/cpu/gemm_q8c.h"
#include "kernels/cpu/q8_chunks.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/matmul_cpu.h"
#include "kernels/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/ref/matmul.h"
#include "runtime/probe_host.h"
#include "runtime/thread_pool.h"
#include "tests/bench/bench_cpu_util.h"
#include "tests/bench/bench_peak.h"

using namespace ls;

namespace {

// Offsets of the fp16 fields in a block (patched to finite values).
std::vector<size_t> half_fields(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
      return {0, 2};
    case GgmlType::Q6_K:
      return {offsetof(BlockQ6_K, d)};
    default:
      return {0};
  }
}

// Random bytes (xorshift per 8 bytes, in parallel), then finite scales.
void fill_weights(ThreadPool& pool, GgmlType t, uint8_t* p, uint64_t bytes) {
  const uint64_t block = ggml_traits(t).block_bytes;
  const uint64_t n_blocks = bytes / block;
  const int64_t n_tasks = 64;
  const uint64_t per = (n_blocks + n_tasks - 1) / n_tasks;
  pool.run(n_tasks, [&, per](int64_t task, int) {
    uint64_t x = 0x9E3779B97F4A7C15ull * (task + 1);
    const uint64_t b0 = task * per, b1 = std::min(n_blocks, b0 + per);
    for (uint64_t b = b0; b < b1; ++b) {
      uint8_t* blk = p + b * block;
      for (uint64_t i = 0; i < block; i += 8) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        std::memcpy(blk + i, &x, std::min<uint64_t>(8, block - i));
      }
      for (size_t f : half_fields(t)) {
        const uint16_t h = fp32_to_fp16(0.01f * static_cast<float>(x % 1000) / 1000.0f);
        std::memcpy(blk + f, &h, 2);
      }
    }
  });
}

// The weight buffer, in one of three kinds of memory (see --mem).
class WeightMem {
 public:
  WeightMem(const std::string& kind, uint64_t bytes, const std::string& dir) : bytes_(bytes) {
    if (kind == "file") {
      path_ = dir + "/ls_bench_cpu_matmul.XXXXXX";
      fd_ = mkstemp(path_.data());
      if (fd_ < 0 || ftruncate(fd_, static_cast<off_t>(bytes)) != 0) fail("file");
      p_ = static_cast<uint8_t*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0));
    } else {
      p_ = static_cast<uint8_t*>(
          mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      if (p_ != MAP_FAILED && kind == "huge") madvise(p_, bytes, MADV_HUGEPAGE);
    }
    if (p_ == MAP_FAILED) fail(kind.c_str());
  }
  ~WeightMem() {
    munmap(p_, bytes_);
    if (fd_ >= 0) {
      close(fd_);
      unlink(path_.c_str());
    }
  }
  uint8_t* data() { return p_; }

 private:
  [[noreturn]] static void fail(const char* what) {
    std::perror(what);
    std::exit(1);
  }
  uint8_t* p_ = nullptr;
  uint64_t bytes_;
  int fd_ = -1;
  std::string path_;
};

// The core's clock while it runs: 2^28 dependent 64-bit adds (one cycle each
// on any x86 core of the last 15 years), timed. Per-chunk cycle counts of the
// kernels follow from it.
double core_ghz() {
  uint64_t v = 1;
  const uint64_t n = uint64_t{1} << 28;
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < n; ++i) asm volatile("add $1, %0" : "+r"(v));
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (v == 0) std::printf(" ");  // keeps v alive
  return n / sec / 1e9;
}

struct Shape {
  int64_t n_in, n_out;
  const char* role;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads;
  std::vector<int64_t> ntoks = {1, 8};
  std::vector<std::string> isa_names = {"best"};
  std::vector<std::string> type_names = {"q4_k", "q5_k", "q6_k", "q8_0", "q4_0"};
  int reps = 9;
  double host_gib = 2, weights_gib = 4;
  bool with_ref = false;
  std::string json_out;
  std::vector<std::string> acts = {"q8", "f32"}, mems = {"anon"}, paths = {"dot", "gemm"};
  std::vector<int> panel_kibs = {0};
  std::vector<std::string> amx_names = {"off", "on"}, forms = {"lanes"}, direct_names = {"off"},
                           vnni_names = {"on"};
  std::vector<int> tasks = {CpuMatmulTuning{}.tasks_per_thread},
                   pfs = {CpuMatmulTuning{}.prefetch_rows},
                   hints = {CpuMatmulTuning{}.prefetch_hint};
  std::string shape_set = "70b", file_dir = "/tmp";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--threads") {
      for (auto& s : split(next())) threads.push_back(std::atoi(s.c_str()));
    } else if (a == "--ntok") {
      ntoks.clear();
      for (auto& s : split(next())) ntoks.push_back(std::atoll(s.c_str()));
    } else if (a == "--isa") {
      isa_names = split(next());
    } else if (a == "--types") {
      type_names = split(next());
    } else if (a == "--reps") {
      reps = std::max(1, std::atoi(next().c_str()));
    } else if (a == "--weights-gib") {
      weights_gib = std::atof(next().c_str());
    } else if (a == "--host-bytes-gib") {
      host_gib = std::atof(next().c_str());
    } else if (a == "--act") {
      acts = split(next());
    } else if (a == "--path") {
      paths = split(next());
    } else if (a == "--panel-kib") {
      panel_kibs.clear();
      for (auto& s : split(next())) panel_kibs.push_back(std::atoi(s.c_str()));
    } else if (a == "--amx") {
      amx_names = split(next());
    } else if (a == "--direct") {
      direct_names = split(next());
    } else if (a == "--avx-vnni") {
      vnni_names = split(next());
    } else if (a == "--form") {
      forms = split(next());
    } else if (a == "--mem") {
      mems = split(next());
    } else if (a == "--tasks") {
      tasks.clear();
      for (auto& s : split(next())) tasks.push_back(std::atoi(s.c_str()));
    } else if (a == "--pf") {
      pfs.clear();
      for (auto& s : split(next())) pfs.push_back(std::atoi(s.c_str()));
    } else if (a == "--hint") {
      hints.clear();
      for (auto& s : split(next())) hints.push_back(std::atoi(s.c_str()));
    } else if (a == "--shapes") {
      shape_set = next();
    } else if (a == "--file-dir") {
      file_dir = next();
    } else if (a == "--ref") {
      with_ref = true;
    } else if (a == "--json") {
      json_out = next();
    } else {
      std::fprintf(stderr, "unknown argument %s (see the header of bench_cpu_matmul.cpp)\n",
                   a.c_str());
      return 2;
    }
  }
  const int all = default_thread_count();
  if (threads.empty())
    for (int t = 1; t <= all; ++t) threads.push_back(t);
  const int most = *std::max_element(threads.begin(), threads.end());

  const auto isas_or = bench_parse_isas(isa_names);
  if (!isas_or) return 2;
  const std::vector<CpuIsa> isas = *isas_or;

  // ---- The bound: host memory read bandwidth per thread count ----------------
  // Pools that fill buffers are gone before anything is timed: their idle
  // workers spin (yielding) for a while after their last job, beside the
  // pool under test (bench_cpu_attention.cpp says what that cost).
  const auto host_or = bench_host_bounds(threads, most, host_gib);
  if (!host_or) return 1;
  const std::vector<double> host = *host_or;
  std::printf("core clock (a chain of dependent adds, one per cycle): %.2f GHz\n", core_ghz());
  // The compute bound per (ISA, thread count): int8 products/s and f32 flops/s.
  std::vector<std::vector<double>> peak_i8(3, std::vector<double>(most + 1, 0.0)),
      peak_f32(3, std::vector<double>(most + 1, 0.0));
  std::printf("bound: peak multiply rate, all threads at once\n%-10s %8s %14s %14s\n", "isa",
              "threads", "int8 GMAC/s", "f32 GFLOP/s");
  for (CpuIsa i : isas)
    for (int th : threads) {
      ThreadPool pool(th);
      const int k = static_cast<int>(i);
      peak_i8[k][th] = bench_peak_int8_macs(pool, i);
      peak_f32[k][th] = bench_peak_f32_flops(pool, i);
      std::printf("%-10s %8d %14.1f %14.1f\n", cpu_isa_name(i), th, peak_i8[k][th] / 1e9,
                  peak_f32[k][th] / 1e9);
    }
  std::printf("cpu: best matmul variant %s; q8 kernel %s\n\n", cpu_isa_name(cpu_isa_best()),
              dot_q8_name(cpu_isa_best()));

  std::vector<Shape> shapes = {{8192, 8192, "wq/wo"},
                               {8192, 28672, "gate/up"},
                               {28672, 8192, "down"},
                               {8192, 1024, "wk/wv"}};
  if (shape_set == "1b")
    shapes = {
        {2048, 2048, "wq/wo"}, {2048, 8192, "gate/up"}, {8192, 2048, "down"}, {2048, 512, "wk/wv"}};
  if (shape_set == "8b")
    shapes = {{4096, 4096, "wq/wo"},
              {4096, 14336, "gate/up"},
              {14336, 4096, "down"},
              {4096, 1024, "wk/wv"}};
  // Compute, not memory: a matrix a core's L2 holds, read again and again
  // (with --weights-gib 0 the buffer is just this matrix), so GB/s here is
  // what the kernel's instructions allow one thread.
  if (shape_set == "l2") shapes = {{8192, 256, "l2-resident"}};
  std::printf(
      "%-5s %-11s %-7s %4s %3s %-10s %-4s %-4s %-4s %3s %2s %2s %5s %8s %9s %7s %7s %9s %8s "
      "%-5s %6s\n",
      "type", "n_in x n_out", "", "ntok", "thr", "isa", "act", "path", "mem", "tpt", "pf", "h",
      "panel", "MB", "GB/s med", "min", "max", "GFLOP/s", "host", "bound", "ratio");
  nlohmann::json rows = nlohmann::json::array();
  std::vector<float> x, y;
  for (const auto& tn : type_names) {
    auto t = ggml_type_from_name(tn);
    if (!t || !matmul_cpu_supports({*t, nullptr, 8192, 1})) {
      std::fprintf(stderr, "--types %s: not a type matmul_cpu handles\n", tn.c_str());
      return 2;
    }
    // One buffer per type, at least --weights-gib, so rotating slices come from DRAM.
    uint64_t largest = 0;
    for (const Shape& s : shapes)
      largest = std::max<uint64_t>(largest, ggml_row_bytes(*t, s.n_in) * s.n_out);
    const uint64_t buf_bytes =
        std::max<uint64_t>(largest, static_cast<uint64_t>(weights_gib * (1ull << 30)));
    for (const std::string& mem : mems) {
      WeightMem wmem(mem, buf_bytes, file_dir);
      uint8_t* wbuf = wmem.data();
      {
        ThreadPool fill_pool(most);
        fill_weights(fill_pool, *t, wbuf, buf_bytes);
      }
      for (const Shape& s : shapes) {
        const uint64_t wbytes = ggml_row_bytes(*t, s.n_in) * s.n_out;
        const uint64_t n_slices = std::max<uint64_t>(1, buf_bytes / wbytes);
        for (int64_t nt : ntoks) {
          x.assign(nt * s.n_in, 0.0f);
          std::mt19937 rng(1);
          std::normal_distribution<float> nd;
          for (auto& v : x) v = nd(rng);
          y.assign(nt * s.n_out, 0.0f);
          for (int th : threads) {
            ThreadPool pool(th);
            CpuMatmulScratch scratch(th, s.n_in), scratch_c(th, s.n_in);
            scratch.act().reserve(nt, s.n_in);
            scratch_c.act().set_chunks(true);
            scratch_c.act().reserve(nt, s.n_in);
            std::vector<std::vector<float>> ref_scratch(th);
            GemmQ8Scratch gemm_scratch;
            struct Variant {
              std::string name;
              bool ref;
              CpuIsa isa;
              CpuAct act;
              bool gemm;
              CpuMatmulTuning tune;
              GemmQ8Tuning gtune;
              bool chunks = false;  // the chunk form (kernels/cpu/q8_chunks.h)
            };
            std::vector<Variant> vs;
            for (CpuIsa i : isas)
              for (const std::string& an : acts) {
                const CpuAct act = cpu_act_from_name(an).value_or(CpuAct::Q8);
                if (act == CpuAct::F32) {
                  vs.push_back({cpu_isa_name(i), false, i, act, false, {}, {}});
                  continue;
                }
                for (const std::string& path : paths)
                  for (const std::string& form : forms) {
                    const bool ch = form == "chunks";
                    if (ch && !q8c_type(*t)) continue;
                    if (ch) {  // the chunk form: its dot, or its GEMM on the tile unit
                      if (path == "gemm" && (i != CpuIsa::Avx512 || !cpu_amx_usable())) continue;
                      GemmQ8Tuning gt{int64_t{0}, 0, 0, GemmQ8Amx::On};
                      vs.push_back(
                          {path == "gemm" ? "amx-chunks" : std::string(dot_q8c_name(i)) + "-chunks",
                           false,
                           i,
                           act,
                           path == "gemm",
                           {},
                           gt,
                           true});
                      continue;
                    }
                    if (path == "gemm") {
                      for (const std::string& am : amx_names) {
                        const bool amx = am == "on";
                        if (amx && (i != CpuIsa::Avx512 || !cpu_amx_usable())) continue;
                        GemmQ8Tuning gt{int64_t{0}, 0, 0, amx ? GemmQ8Amx::On : GemmQ8Amx::Off};
                        for (const std::string& dn : direct_names) {
                          const bool direct = dn == "on";
                          // The direct tile: AVX-512 VNNI, at most its tokens, its types.
                          if (direct &&
                              (amx || i != CpuIsa::Avx512 ||
                               !gemm_q8_direct_supported(*t, s.n_in) || nt > kGemmQ8DirectToks))
                            continue;
                          gt.direct = direct ? 1 : 0;
                          for (const std::string& vn : vnni_names) {
                            // The AVX2 tile with AVX-VNNI ("on": where the CPU has it).
                            const bool avx2 = i == CpuIsa::Avx2, on = vn == "on";
                            if (!avx2 && !on) continue;  // one row for other ISAs
                            if (avx2 && on && !cpu_has_avx_vnni()) continue;
                            gt.avx_vnni = avx2 && on ? 1 : 0;
                            for (int kib : panel_kibs) {
                              gt.panel_bytes = int64_t{kib} << 10;
                              vs.push_back({amx                ? "amx"
                                            : direct           ? "avx512vnni-direct"
                                            : gt.avx_vnni == 1 ? "avx2-vnni"
                                                               : gemm_q8_kernel(i).name,
                                            false,
                                            i,
                                            act,
                                            true,
                                            {},
                                            gt});
                            }
                          }
                        }
                      }
                      continue;
                    }
                    for (int tp : tasks)
                      for (int pf : pfs)
                        for (int h : hints)
                          vs.push_back({dot_q8_name(i), false, i, act, false, {tp, pf, h}, {}});
                  }
              }
            if (with_ref && nt == 1)
              vs.push_back({"ref", true, CpuIsa::Portable, CpuAct::F32, false, {}, {}});
            // Slices go on where the last variant's stopped: one that
            // started again at slice 0 read what the one before it had just
            // read, which a 300 MiB L3 (the H200 machine's Xeon) may still
            // hold for the smaller shapes (session 33).
            uint64_t slice = 0;
            for (const Variant& v : vs) {
              std::vector<double> gbps;
              for (int r = -1; r < reps; ++r) {  // r = -1: warm-up
                const WeightView w{*t, wbuf + (slice++ % n_slices) * wbytes, s.n_in, s.n_out};
                const auto t0 = std::chrono::steady_clock::now();
                if (v.ref) {
                  matmul_f32(pool, w, x.data(), nt, y.data(), ref_scratch);
                } else if (v.act == CpuAct::Q8) {
                  const ActQ8View xq = matmul_cpu_quantize(pool, x.data(), nt, s.n_in,
                                                           v.chunks ? scratch_c : scratch, v.isa);
                  if (v.gemm && v.chunks) {
                    const MatmulQ8Part part{w, y.data()};
                    gemm_q8c_parts(pool, &part, 1, xq, nt, scratch_c.gemm_chunks(),
                                   gemm_q8c_kernel(GemmQ8Amx::On));
                  } else if (v.gemm) {
                    const MatmulQ8Part part{w, y.data()};
                    gemm_q8_parts(pool, &part, 1, xq, nt, gemm_scratch, v.isa, v.gtune);
                  } else {
                    matmul_cpu_q8(pool, w, xq, nt, y.data(), v.isa, v.tune);
                  }
                } else {
                  matmul_cpu(pool, w, x.data(), nt, y.data(), scratch, v.isa);
                }
                const double sec =
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                if (r >= 0) gbps.push_back(wbytes / sec / 1e9);
              }
              const Stats st = stats(gbps);
              // The roofline: the weights once from memory, or the products at
              // the peak rate, whichever takes longer.
              const double macs = double(s.n_in) * s.n_out * nt;
              const double t_mem = wbytes / (host[th] * 1e9);
              const int ik = static_cast<int>(v.isa);
              // (AMX: no peak measured; its products are 8x VNNI's a cycle,
              // so the bound is the memory's.)
              const double peak = v.ref || (v.gemm && v.gtune.amx == GemmQ8Amx::On) ? 0
                                  : v.act == CpuAct::Q8 ? peak_i8[ik][th]
                                                        : peak_f32[ik][th] / 2;  // FMAs/s
              const double t_cpu = peak > 0 ? macs / peak : 0;
              const double t_med = wbytes / (st.med * 1e9);
              const double gflops = 2 * macs / t_med / 1e9;
              const char* bound = t_cpu > t_mem ? (v.act == CpuAct::Q8 ? "i8" : "f32") : "mem";
              const double ratio = std::max(t_mem, t_cpu) / t_med;
              char shape[32];
              std::snprintf(shape, sizeof shape, "%ldx%ld", static_cast<long>(s.n_in),
                            static_cast<long>(s.n_out));
              const bool q8 = v.act == CpuAct::Q8;
              const bool dot = q8 && !v.gemm;
              std::printf(
                  "%-5s %-11s %-7s %4ld %3d %-10s %-4s %-4s %-4s %3s %2s %2s %5s %8.1f %9.2f %7.2f "
                  "%7.2f %9.1f %8.2f %-5s %6.2f\n",
                  ggml_type_name(*t), shape, s.role, static_cast<long>(nt), th, v.name.c_str(),
                  cpu_act_name(v.act),
                  v.gemm ? "gemm"
                  : q8   ? "dot"
                         : "-",
                  mem.c_str(), dot ? std::to_string(v.tune.tasks_per_thread).c_str() : "-",
                  dot ? std::to_string(v.tune.prefetch_rows).c_str() : "-",
                  dot ? std::to_string(v.tune.prefetch_hint).c_str() : "-",
                  v.gemm ? std::to_string(v.gtune.panel_bytes >> 10).c_str() : "-", wbytes / 1e6,
                  st.med, st.min, st.max, gflops, host[th], bound, ratio);
              std::fflush(stdout);
              rows.push_back({{"type", ggml_type_name(*t)},
                              {"n_in", s.n_in},
                              {"n_out", s.n_out},
                              {"n_tok", nt},
                              {"threads", th},
                              {"isa", v.name},
                              {"act", cpu_act_name(v.act)},
                              {"path", v.gemm ? "gemm"
                                       : q8   ? "dot"
                                              : "f32"},
                              {"panel_kib", v.gemm ? v.gtune.panel_bytes >> 10 : 0},
                              {"gflops_median", gflops},
                              {"peak_ops", peak},
                              {"bound", bound},
                              {"mem", mem},
                              {"tasks_per_thread", q8 ? v.tune.tasks_per_thread : 0},
                              {"prefetch_hint", q8 ? v.tune.prefetch_hint : 0},
                              {"prefetch_rows", q8 ? v.tune.prefetch_rows : 0},
                              {"weight_bytes", wbytes},
                              {"gbps_median", st.med},
                              {"gbps_min", st.min},
                              {"gbps_max", st.max},
                              {"host_gbps", host[th]},
                              {"ratio_host", st.med / host[th]},
                              {"ratio", ratio}});
            }
          }
        }
      }
    }  // mem
  }
  if (!json_out.empty() && !bench_write_json(json_out, nlohmann::json::object(), threads, host, rows))
    return 1;
  return 0;
}
