// layerstream convert: a Hugging Face Llama checkpoint folder to GGUF
// (model/hf_convert.h says what is converted and how).
// defines: add_convert()
#include <cstdio>

#include "model/hf_convert.h"  // defines: HfConvertOptions, hf_convert()
#include "tools/commands.h"

namespace ls {

Command add_convert(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "convert", "Convert a Hugging Face Llama checkpoint folder (safetensors) to GGUF");
  auto o = std::make_shared<HfConvertOptions>();
  sub->add_option("dir", o->dir,
                  "Checkpoint folder: config.json, tokenizer.json, *.safetensors (F32, F16, BF16)")
      ->required();
  sub->add_option("-o,--output", o->out, "Output GGUF path")->required();
  sub->add_option("--quant,--outtype", o->quant,
                  "Type: auto (the checkpoint's float type), f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 "
                  "q5_1 q2_k q3_k q4_k q5_k q6_k, or the mixtures q4_k_m q5_k_m")
      ->capture_default_str();
  sub->add_option("-t,--threads", o->threads, "Threads (default: the CPUs this process may use)");
  sub->add_flag("-q,--quiet", o->quiet, "No summary line");
  return [o] {
    Status st = hf_convert(*o);
    if (!st.ok()) {
      std::fprintf(stderr, "error: %s\n", st.error().message.c_str());
      return 1;
    }
    return 0;
  };
}

}  // namespace ls
