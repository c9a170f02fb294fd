// Memory-mapped model files can shrink under a running process (another
// program truncates or rewrites the file); touching a page past the new end
// raises SIGBUS. The guard turns that into the clear error and non-zero exit
// every other bad input gets — naming the file — instead of a crash dump.
// The streaming reader never faults (it reads with read calls and reports a
// short read as an error); this covers what is read in place: the global
// tensors and resident layers on the CPU backend.
// defines: map_guard_add(), map_guard_remove(), GuardedMap, map_file_guarded(),
//          unmap_guarded()
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/status.h"

namespace ls {

// Register / unregister a mapping; the SIGBUS handler is installed on first use.
void map_guard_add(const void* base, size_t bytes, const char* path);
void map_guard_remove(const void* base);

// The whole regular file at path, mapped read-only and registered with the
// guard (an empty file maps nothing: map null, size 0). Errors name the path.
struct GuardedMap {
  void* map = nullptr;
  uint64_t size = 0;
};
Expected<GuardedMap> map_file_guarded(const std::string& path);
// Unregisters and unmaps what map_file_guarded mapped (nothing for null).
void unmap_guarded(void* map, uint64_t size);

}  // namespace ls
