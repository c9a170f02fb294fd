// Forwarding header, for tests/bench/ only: the GGML type table lives in
// io/ggml_type.h (issue 15 moved it down a floor). tests/bench/ is being edited
// on main at the same time, so its three includes of this path stay as they are
// until that work merges; then point them at io/ggml_type.h and delete this file
// (nothing else may include it: scripts/check_floors.py says so).
// defines: nothing of its own (see io/ggml_type.h)
#pragma once

#include "io/ggml_type.h"
