#include "model/default_model.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "model/synth.h"

namespace ls {

Expected<std::string> default_model_path() {
  namespace fs = std::filesystem;
  fs::path dir;
  if (const char* c = std::getenv("LAYERSTREAM_CACHE"); c && *c) dir = c;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) dir = fs::path(x) / "layerstream";
  else if (const char* h = std::getenv("HOME"); h && *h) dir = fs::path(h) / ".cache" / "layerstream";
  else return make_error("no cache directory: set LAYERSTREAM_CACHE or HOME, or pass -m");
  // The name carries the recipe, so a change of recipe makes a new file.
  const fs::path path = dir / "default-tiny-q8_0-seed1-v1.gguf";
  std::error_code ec;
  if (fs::exists(path, ec)) return path.string();
  fs::create_directories(dir, ec);
  if (ec) return make_error("%s: cannot create: %s", dir.c_str(), ec.message().c_str());
  std::fprintf(stderr, "layerstream: no -m given; synthesizing the default tiny model into %s\n",
               path.c_str());
  SynthOptions opt;
  opt.shape = *synth_preset("tiny");
  opt.quant = *synth_quant_from_name("q8_0");
  opt.seed = 1;
  opt.quiet = true;
  LS_TRY(synth_write(opt, path.string()));
  return path.string();
}

}  // namespace ls
