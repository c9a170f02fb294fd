// layerstream synth: write a Llama GGUF with random weights.
#include <cstdio>

#include "model/synth.h"
#include "tools/commands.h"

namespace ls {

Command add_synth(CLI::App& app) {
  auto* sub = app.add_subcommand("synth", "Write a Llama GGUF with random weights");
  struct Args {
    std::string out, preset = "tiny", quant = "f32", vocab;
    uint32_t layers = 0, dim = 0, heads = 0, kv_heads = 0, ffn = 0, vocab_size = 0, ctx = 0;
    uint64_t seed = 1;
    int threads = 0;
    bool quiet = false, tied = false, zero_layers = false;
  };
  auto a = std::make_shared<Args>();
  sub->add_option("-o,--output", a->out, "Output GGUF path")->required();
  sub->add_option("--preset", a->preset, "Shape: tiny, 1b, 8b, 70b (Llama 3.x shapes)")
      ->capture_default_str();
  sub->add_option("--quant", a->quant,
                  "Weight type: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k, "
                  "or the mixtures q4_k_m q5_k_m")
      ->capture_default_str();
  sub->add_option("--layers", a->layers, "Override: number of layers");
  sub->add_option("--dim", a->dim, "Override: embedding width");
  sub->add_option("--heads", a->heads, "Override: attention heads");
  sub->add_option("--kv-heads", a->kv_heads, "Override: key/value heads (GQA)");
  sub->add_option("--ffn", a->ffn, "Override: feed-forward width");
  sub->add_option("--vocab-size", a->vocab_size, "Override: vocabulary size (built-in vocab only)");
  sub->add_option("--ctx", a->ctx, "Override: training context length");
  sub->add_option("--vocab", a->vocab, "Copy the tokenizer from this GGUF (e.g. a vocab-only file)");
  sub->add_option("--seed", a->seed, "Random seed (same seed, same file)")->capture_default_str();
  sub->add_option("-t,--threads", a->threads, "Threads (default: the CPUs this process may use)");
  auto* tied = sub->add_flag(
      "--tied,!--untied", a->tied,
      "Override: the output head is the token embedding (as Llama 3.2 1B), or a matrix of its "
      "own (as 8B and 70B). Tied, the random model's greedy output repeats the last token by a "
      "wide margin, so a benchmark's tokens do not flip with the arithmetic (a verify step's "
      "width); the bytes a token reads are the same");
  sub->add_flag("--zero-layers", a->zero_layers,
                "Leave the layers' matrices as holes of a sparse file (zeros): the whole model's "
                "layout and size, but only its embeddings, norms and head on disk, to check a "
                "reader on a model larger than the disk (each layer then passes its input through)");
  sub->add_flag("-q,--quiet", a->quiet, "No progress output");
  return [a, tied] {
    auto shape = synth_preset(a->preset);
    if (!shape) {
      std::fprintf(stderr, "synth: unknown preset '%s' (tiny, 1b, 8b, 70b)\n", a->preset.c_str());
      return 1;
    }
    if (a->layers) shape->n_layer = a->layers;
    if (a->dim) shape->n_embd = a->dim;
    if (a->heads) shape->n_head = a->heads;
    if (a->kv_heads) shape->n_head_kv = a->kv_heads;
    if (a->ffn) shape->n_ff = a->ffn;
    if (a->vocab_size) shape->n_vocab = a->vocab_size;
    if (a->ctx) shape->n_ctx = a->ctx;
    if (tied->count() > 0) shape->tied = a->tied;
    if (a->layers || a->dim || a->heads || a->kv_heads || a->ffn) shape->name = "custom";
    auto quant = synth_quant_from_name(a->quant);
    if (!quant) {
      std::fprintf(stderr, "synth: unknown or unsupported --quant '%s'\n", a->quant.c_str());
      return 1;
    }
    SynthOptions opt;
    opt.shape = *shape;
    opt.quant = *quant;
    opt.seed = a->seed;
    opt.vocab_path = a->vocab;
    opt.threads = a->threads;
    opt.quiet = a->quiet;
    opt.zero_layers = a->zero_layers;
    Status st = synth_write(opt, a->out);
    if (!st.ok()) {
      std::fprintf(stderr, "error: %s\n", st.error().message.c_str());
      return 1;
    }
    return 0;
  };
}

}  // namespace ls
