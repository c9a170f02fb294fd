// The embedded default model: `layerstream decode` with no -m runs a tiny
// model synthesized once into the user's cache directory, so the first
// command of the README shows the whole path on any machine.
// defines: default_model_path()
#pragma once

#include <string>

#include "runtime/status.h"

namespace ls {

// Path of the default model ($LAYERSTREAM_CACHE, else $XDG_CACHE_HOME/layerstream,
// else ~/.cache/layerstream), synthesized there first if it is absent.
Expected<std::string> default_model_path();

}  // namespace ls
