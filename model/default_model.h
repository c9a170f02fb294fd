// The default model: `layerstream decode` with no -m runs the trained KJV
// target (model/weights/kjv-target-q8_0.gguf, issue 16), installed beside
// the binary: the build copies it next to `layerstream` as
// layerstream-default.gguf and `cmake --install` puts it in
// share/layerstream/. No network, no home directory, no cache.
// defines: kDefaultModelFile, default_model_candidates(), default_model_path()
#pragma once

#include <string>
#include <vector>

#include "runtime/status.h"

namespace ls {

inline constexpr const char* kDefaultModelFile = "layerstream-default.gguf";

// Where the default model is looked for, in order, for an executable at
// `exe`: beside it (the build tree), then ../share/layerstream/ (an install
// under a prefix: PREFIX/bin/layerstream, PREFIX/share/layerstream/).
std::vector<std::string> default_model_candidates(const std::string& exe);

// The first candidate that exists for the executable at `exe`; an error
// naming every candidate and -m when none does.
Expected<std::string> default_model_path(const std::string& exe);

// The same for this process's own executable (/proc/self/exe).
Expected<std::string> default_model_path();

}  // namespace ls
