// layerstream inspect: metadata, tensor table, model config and layer map of a GGUF.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "actors/engine.h"
#include "io/gguf.h"
#include "model/layer_map.h"
#include "model/llama_config.h"
#include "model/model.h"
#include "tools/commands.h"

namespace ls {
namespace {

std::string shape_str(const std::vector<uint64_t>& s) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) o += (i ? " x " : "") + std::to_string(s[i]);
  return o;
}

nlohmann::json value_json(const GgufValue& v, bool full) {
  switch (v.type) {
    case GgufType::STRING: return v.s;
    case GgufType::BOOL: return v.u != 0;
    case GgufType::FLOAT32: case GgufType::FLOAT64: return v.f;
    case GgufType::ARRAY: {
      nlohmann::json j;
      j["type"] = std::string("array[") + gguf_type_name(v.arr->elem_type) + "]";
      j["count"] = v.arr->count;
      if (full) {
        nlohmann::json e = nlohmann::json::array();
        for (uint64_t i = 0; i < v.arr->count; ++i) {
          if (v.arr->elem_type == GgufType::STRING) e.push_back(v.arr->strings[i]);
          else if (v.arr->elem_type == GgufType::ARRAY) e.push_back(value_json(v.arr->arrays[i], true));
          else if (v.arr->elem_type == GgufType::FLOAT32 || v.arr->elem_type == GgufType::FLOAT64)
            e.push_back(v.arr->number(i));
          else e.push_back(v.arr->integer(i));
        }
        j["values"] = e;
      }
      return j;
    }
    default:
      if (v.type == GgufType::UINT64) return v.u;
      return v.as_int();
  }
}

const char* scaling_name(const LlamaConfig& c) {
  switch (c.rope_scaling) {
    case RopeScalingKind::Linear:
      return "linear";
    case RopeScalingKind::Llama3:
      return "llama3";  // rope_freqs.weight
    default:
      return "none";
  }
}

nlohmann::json extent_json(const LayerExtent& e) {
  nlohmann::json j;
  j["layer"] = e.layer;
  j["tensor_bytes"] = e.tensor_bytes;
  j["range_bytes"] = e.range_bytes;
  j["tensors"] = nlohmann::json::array();
  for (const GgufTensor* t : e.tensors) j["tensors"].push_back(t->name);
  j["ranges"] = nlohmann::json::array();
  for (const ByteRange& r : e.ranges) j["ranges"].push_back({{"offset", r.offset}, {"bytes", r.bytes}});
  return j;
}

int run_inspect(const std::string& path, bool json, bool full_arrays, EngineOptions plan_opt) {
  auto fr = GgufFile::open(path);
  if (!fr) {
    std::fprintf(stderr, "error: %s\n", fr.error().message.c_str());
    return 1;
  }
  const GgufFile& f = **fr;
  auto model = load_llama(f);
  const uint32_t n_layer = model ? model->config.n_layer : 0;
  const LayerMap map = build_layer_map(f, n_layer);

  if (json) {
    nlohmann::json j;
    j["file"] = path;
    j["version"] = f.version();
    j["file_bytes"] = f.file_size();
    j["alignment"] = f.alignment();
    j["data_offset"] = f.data_offset();
    j["metadata"] = nlohmann::json::object();
    for (const auto& [k, v] : f.metadata()) j["metadata"][k] = value_json(v, full_arrays);
    j["tensors"] = nlohmann::json::array();
    for (const GgufTensor& t : f.tensors())
      j["tensors"].push_back({{"name", t.name}, {"type", ggml_type_name(t.type)}, {"shape", t.shape},
                              {"offset", t.offset}, {"bytes", t.bytes}});
    if (model) {
      const LlamaConfig& c = model->config;
      j["model"] = {{"n_layer", c.n_layer},
                    {"n_embd", c.n_embd},
                    {"n_ff", c.n_ff},
                    {"n_head", c.n_head},
                    {"n_head_kv", c.n_head_kv},
                    {"head_dim", c.head_dim},
                    {"n_rot", c.n_rot},
                    {"n_vocab", c.n_vocab},
                    {"n_ctx_train", c.n_ctx_train},
                    {"rms_eps", c.rms_eps},
                    {"rope_freq_base", c.rope_freq_base},
                    {"rope_freqs", c.has_rope_freqs},
                    {"rope_scaling", scaling_name(c)},
                    {"tied_output", c.tied_output}};
    } else {
      j["model"] = nullptr;
      j["model_error"] = model.error().message;
    }
    j["layers"] = nlohmann::json::array();
    for (const LayerExtent& e : map.layers) j["layers"].push_back(extent_json(e));
    j["globals"] = extent_json(map.globals);
    j["total_tensor_bytes"] = map.total_tensor_bytes;
    std::printf("%s\n", j.dump(1).c_str());
    return 0;
  }

  std::printf("file:      %s\n", path.c_str());
  std::printf("format:    GGUF v%u, %.3f GB, alignment %llu, data at byte %llu\n", f.version(),
              f.file_size() / 1e9, (unsigned long long)f.alignment(),
              (unsigned long long)f.data_offset());
  std::printf("\nmetadata (%zu keys):\n", f.metadata().size());
  for (const auto& [k, v] : f.metadata())
    std::printf("  %-44s %-8s %s\n", k.c_str(), gguf_type_name(v.type), v.to_string().c_str());
  std::printf("\ntensors (%zu):\n  %-32s %-6s %-22s %14s %14s\n", f.tensors().size(), "name", "type",
              "shape", "offset", "bytes");
  for (const GgufTensor& t : f.tensors())
    std::printf("  %-32s %-6s %-22s %14llu %14llu\n", t.name.c_str(), ggml_type_name(t.type),
                shape_str(t.shape).c_str(), (unsigned long long)t.offset,
                (unsigned long long)t.bytes);
  if (model) {
    const LlamaConfig& c = model->config;
    char linear[48] = "";
    if (c.rope_scaling == RopeScalingKind::Linear)
      std::snprintf(linear, sizeof linear, ", linear scaling x%g", 1.0 / c.rope_freq_scale);
    std::printf(
        "\nmodel: llama, %u layers, dim %u, ffn %u, heads %u (kv %u, head size %u), vocab %u,"
        "\n       rope base %g%s%s, rms eps %g, context %u, output %s\n",
        c.n_layer, c.n_embd, c.n_ff, c.n_head, c.n_head_kv, c.head_dim, c.n_vocab, c.rope_freq_base,
        c.has_rope_freqs ? " with rope_freqs (Llama 3.1 scaling)" : "", linear, c.rms_eps,
        c.n_ctx_train, c.tied_output ? "tied to token_embd" : "separate");
  } else {
    std::printf("\nmodel: not a runnable Llama model: %s\n", model.error().message.c_str());
  }
  std::printf("\nlayer map (what the streaming reader reads per layer):\n");
  std::printf("  %-8s %8s %8s %16s %16s\n", "layer", "tensors", "ranges", "tensor bytes", "read bytes");
  auto row = [](const char* name, const LayerExtent& e) {
    std::printf("  %-8s %8zu %8zu %16llu %16llu\n", name, e.tensors.size(), e.ranges.size(),
                (unsigned long long)e.tensor_bytes, (unsigned long long)e.range_bytes);
  };
  uint64_t layers_bytes = 0;
  for (const LayerExtent& e : map.layers) {
    row(std::to_string(e.layer).c_str(), e);
    layers_bytes += e.tensor_bytes;
  }
  row("globals", map.globals);
  std::printf("  total: %.3f GB in tensors (%.3f GB in layers, %.3f GB global)\n",
              map.total_tensor_bytes / 1e9, layers_bytes / 1e9, map.globals.tensor_bytes / 1e9);
  if (model) {
    // The tier plan a run with these budgets would use.
    auto m = open_model(path);
    if (!m) {
      std::printf("\ntier plan: not available: %s\n", m.error().message.c_str());
      return 0;
    }
    auto plan = plan_for(**m, plan_opt);
    if (!plan) {
      std::fprintf(stderr, "error: %s\n", plan.error().message.c_str());
      return 1;
    }
    std::printf("\n%s", plan->to_text().c_str());
  }
  return 0;
}

}  // namespace

Command add_inspect(CLI::App& app) {
  auto* sub = app.add_subcommand("inspect", "Show a GGUF file's metadata, tensors and layer map");
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto full = std::make_shared<bool>(false);
  auto po = std::make_shared<EngineOptions>();
  sub->add_option("file", *path, "GGUF file")->required();
  sub->add_flag("--json", *json, "Machine-readable output");
  sub->add_flag("--full-arrays", *full, "With --json: include every array element");
  sub->add_option("--vram-budget", po->vram_budget, "Plan: device memory budget (e.g. 24GiB)");
  sub->add_option("--ram-budget", po->ram_budget, "Plan: host memory budget (e.g. 48GiB)");
  sub->add_option("--tiers", po->tiers, "Plan: forced tiers (A resident, B RAM, C storage)");
  sub->add_option("--device-slots", po->device_slots, "Plan: device slots")->capture_default_str();
  sub->add_option("--staging-buffers", po->staging_buffers, "Plan: staging buffers")
      ->capture_default_str();
  sub->add_option("-c,--ctx-size", po->n_ctx, "Plan: context size (0: the model's, at most 4096)");
  return [path, json, full, po] { return run_inspect(*path, *json, *full, *po); };
}

}  // namespace ls
