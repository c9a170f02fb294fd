#include "model/default_model.h"

#include <filesystem>

namespace ls {

namespace fs = std::filesystem;

std::vector<std::string> default_model_candidates(const std::string& exe) {
  const fs::path dir = fs::path(exe).parent_path();
  return {(dir / kDefaultModelFile).lexically_normal().string(),
          (dir / ".." / "share" / "layerstream" / kDefaultModelFile).lexically_normal().string()};
}

Expected<std::string> default_model_path(const std::string& exe) {
  const std::vector<std::string> paths = default_model_candidates(exe);
  std::error_code ec;
  for (const std::string& p : paths)
    if (fs::is_regular_file(p, ec)) return p;
  return make_error(
      "no default model: neither %s nor %s exists (the build puts it beside the binary, "
      "`cmake --install` in share/layerstream); pass -m MODEL.gguf",
      paths[0].c_str(), paths[1].c_str());
}

Expected<std::string> default_model_path() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    return make_error(
        "no default model: /proc/self/exe: %s (the default model is found beside "
        "the binary); pass -m MODEL.gguf",
        ec.message().c_str());
  return default_model_path(exe.string());
}

}  // namespace ls
