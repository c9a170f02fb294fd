// `layerstream convert` on bad input, run as the user runs it (LS_BINARY):
// a valid checkpoint (hf_checkpoint_writer.h) broken one way per case. Each
// must exit 1 with a message that names the file and what is wrong, and
// leave nothing in the output folder (no output, no temporary file).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "io/gguf.h"                                // defines: GgufFile
#include "tests/unit/ls_binary.h"                   // defines: LS_BINARY
#include "tests/unit/tools/hf_checkpoint_writer.h"  // defines: make_checkpoint(), run_tool(), ...

using namespace ls;
using namespace ls::test;

namespace {

// A valid single-shard F32 checkpoint and its parts, for the bad-input cases.
struct BadInput {
  Dir dir{"bad"};
  SynthShape s = source_shape(false);
  std::shared_ptr<GgufFile> src;
  Checkpoint ck;
  BadInput() {
    auto f = GgufFile::open(synth_f32(dir, s, 3));
    REQUIRE(f);
    src = *f;
    ck = make_checkpoint(dir.file("hf"), s, *src, "F32", 1);
  }
  std::vector<const HfTensor*> all() const {
    std::vector<const HfTensor*> v;
    for (const HfTensor& t : ck.tensors) v.push_back(&t);
    return v;
  }
  // Convert; expect exit 1, `says` in the message, and nothing written.
  void expect_error(const std::string& says, const std::string& names_file) {
    const std::string out = dir.file("out/model.gguf");
    fs::create_directories(dir.file("out"));
    std::string err;
    const int rc = run_tool(dir, "convert " + ck.dir + " -o " + out, &err);
    CHECK(rc == 1);
    CHECK_MESSAGE(err.find("error: ") == 0, err);
    CHECK_MESSAGE(err.find(says) != std::string::npos, err);
    CHECK_MESSAGE(err.find(names_file) != std::string::npos, err);
    CHECK(fs::is_empty(dir.file("out")));  // no output, no temporary file
  }
};

}  // namespace

TEST_CASE("convert: a non-Llama config.json is refused") {
  BadInput b;
  json cfg = json::parse(slurp(b.ck.dir + "/config.json"));
  cfg["architectures"] = {"MistralForCausalLM"};
  std::ofstream(b.ck.dir + "/config.json") << cfg.dump();
  b.expect_error("architectures is [\"MistralForCausalLM\"]; convert reads Llama", "config.json");
  cfg.erase("architectures");
  cfg["model_type"] = "gpt2";
  std::ofstream(b.ck.dir + "/config.json") << cfg.dump();
  b.expect_error("model_type is \"gpt2\"", "config.json");
}

TEST_CASE("convert: a missing shard is refused, naming it") {
  BadInput b;
  fs::remove(b.ck.dir + "/model.safetensors");
  std::vector<const HfTensor*> one, two;
  for (size_t i = 0; i < b.ck.tensors.size(); ++i) (i % 2 ? two : one).push_back(&b.ck.tensors[i]);
  json index = {{"weight_map", json::object()}};
  for (const HfTensor* t : one) index["weight_map"][t->name] = "model-00001-of-00002.safetensors";
  for (const HfTensor* t : two) index["weight_map"][t->name] = "model-00002-of-00002.safetensors";
  std::ofstream(b.ck.dir + "/model.safetensors.index.json") << index.dump();
  write_safetensors(b.ck.dir + "/model-00001-of-00002.safetensors", one);
  b.expect_error("shard model-00002-of-00002.safetensors is missing",
                 "model.safetensors.index.json");
}

TEST_CASE("convert: a truncated safetensors file is refused") {
  BadInput b;
  const std::string p = b.ck.dir + "/model.safetensors";
  fs::resize_file(p, fs::file_size(p) / 2);
  b.expect_error("truncated", "model.safetensors");
}

TEST_CASE("convert: a header whose offsets overlap is refused") {
  BadInput b;
  write_safetensors(b.ck.dir + "/model.safetensors", b.all(), [](json& h) {
    auto& o = h["model.layers.0.self_attn.k_proj.weight"]["data_offsets"];
    o = {o[0].get<uint64_t>() - 4, o[1].get<uint64_t>() - 4};  // 4 bytes into the tensor before
  });
  b.expect_error("overlap", "model.safetensors");
}

TEST_CASE("convert: a header whose offsets run past the file is refused") {
  BadInput b;
  write_safetensors(b.ck.dir + "/model.safetensors", b.all(), [](json& h) {
    auto& o = h["lm_head.weight"]["data_offsets"];  // the last tensor
    o = {o[0].get<uint64_t>() + 64, o[1].get<uint64_t>() + 64};
  });
  b.expect_error("run past the end of the file", "model.safetensors");
}

TEST_CASE("convert: an unknown dtype is refused, and so is a known one convert cannot read") {
  BadInput b;
  write_safetensors(b.ck.dir + "/model.safetensors", b.all(),
                    [](json& h) { h["model.norm.weight"]["dtype"] = "F17"; });
  b.expect_error("unknown dtype 'F17'", "model.safetensors");
  // I32 holds as many bytes as F32: a valid file, but not a float tensor.
  write_safetensors(b.ck.dir + "/model.safetensors", b.all(),
                    [](json& h) { h["model.norm.weight"]["dtype"] = "I32"; });
  b.expect_error("tensor 'model.norm.weight' is I32; convert reads F32, F16 and BF16",
                 "model.safetensors");
}

TEST_CASE("convert: a tensor of the wrong shape is refused") {
  BadInput b;
  // k_proj with 64 rows (one head) where GQA's 2 key/value heads need 128.
  HfTensor* k = nullptr;
  for (HfTensor& t : b.ck.tensors)
    if (t.name == "model.layers.1.self_attn.k_proj.weight") k = &t;
  REQUIRE(k != nullptr);
  k->shape = {64, 256};
  k->bytes.resize(64 * 256 * 4);
  write_safetensors(b.ck.dir + "/model.safetensors", b.all());
  b.expect_error(
      "'model.layers.1.self_attn.k_proj.weight' has shape [64, 256], but config.json's "
      "sizes give [128, 256]",
      "model.safetensors");
}

TEST_CASE("convert: a missing tensor is refused, and so is one convert does not know") {
  BadInput b;
  std::vector<const HfTensor*> some;
  for (const HfTensor& t : b.ck.tensors)
    if (t.name != "model.layers.1.mlp.up_proj.weight") some.push_back(&t);
  write_safetensors(b.ck.dir + "/model.safetensors", some);
  b.expect_error("tensor 'model.layers.1.mlp.up_proj.weight' is missing", b.ck.dir);
  HfTensor bias = make_hf_tensor("model.layers.0.self_attn.q_proj.bias", "F32", {256},
                                 std::vector<float>(256, 0.0f));
  std::vector<const HfTensor*> more = b.all();
  more.push_back(&bias);
  write_safetensors(b.ck.dir + "/model.safetensors", more);
  b.expect_error("tensor 'model.layers.0.self_attn.q_proj.bias' is not part of a Llama model",
                 "model.safetensors");
}

TEST_CASE("convert: a tokenizer that is not Llama 3's byte-level BPE is refused") {
  BadInput b;
  json tok = json::parse(slurp(b.ck.dir + "/tokenizer.json"));
  tok["pre_tokenizer"] = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};  // GPT-2's split
  std::ofstream(b.ck.dir + "/tokenizer.json") << tok.dump();
  b.expect_error("use_regex true", "tokenizer.json");
}

TEST_CASE("convert: a folder that is not there, or has no config.json, is refused") {
  BadInput b;
  fs::remove(b.ck.dir + "/config.json");
  b.expect_error("config.json: cannot read: No such file or directory", "config.json");
  fs::remove_all(b.ck.dir);
  b.expect_error("not a directory", b.ck.dir);
}
