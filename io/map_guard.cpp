#include "io/map_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace ls {
namespace {

// A fixed table: the handler must not allocate or lock. A slot is published
// by storing `base` last (release) and read with acquire.
struct Slot {
  std::atomic<const char*> base{nullptr};
  size_t bytes = 0;
  char path[512] = {};
};
constexpr int kSlots = 32;
Slot g_slots[kSlots];
std::once_flag g_install;

void write_str(const char* s) {
  ssize_t r = ::write(STDERR_FILENO, s, std::strlen(s));
  (void)r;
}

void on_sigbus(int sig, siginfo_t* info, void*) {
  const char* addr = static_cast<const char*>(info->si_addr);
  for (Slot& s : g_slots) {
    const char* b = s.base.load(std::memory_order_acquire);
    if (b && addr >= b && addr < b + s.bytes) {
      write_str("\nerror: ");
      write_str(s.path);
      write_str(
          ": the model file changed while it was being read (truncated or rewritten?); "
          "stopping\n");
      _exit(1);
    }
  }
  // Not ours: the default action (a crash is what it is).
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void map_guard_add(const void* base, size_t bytes, const char* path) {
  std::call_once(g_install, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, nullptr);
  });
  for (Slot& s : g_slots) {
    const char* expected = nullptr;
    if (s.base.load() != nullptr) continue;
    s.bytes = bytes;
    std::strncpy(s.path, path, sizeof s.path - 1);
    if (s.base.compare_exchange_strong(expected, static_cast<const char*>(base))) return;
  }
  // More than kSlots files mapped at once: the extra ones are simply not guarded.
}

void map_guard_remove(const void* base) {
  for (Slot& s : g_slots)
    if (s.base.load() == base) s.base.store(nullptr, std::memory_order_release);
}

Expected<GuardedMap> map_file_guarded(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error("%s: cannot open: %s", path.c_str(), std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return make_error("%s: cannot stat: %s", path.c_str(), std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error("%s: not a regular file", path.c_str());
  }
  GuardedMap g;
  g.size = static_cast<uint64_t>(st.st_size);
  if (g.size > 0) {
    void* m = mmap(nullptr, g.size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      return make_error("%s: cannot map: %s", path.c_str(), std::strerror(e));
    }
    g.map = m;
    map_guard_add(m, g.size, path.c_str());
  }
  ::close(fd);
  return g;
}

void unmap_guarded(void* map, uint64_t size) {
  if (!map) return;
  map_guard_remove(map);
  munmap(map, size);
}

}  // namespace ls
