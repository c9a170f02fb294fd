// A mapped model file that shrinks under the process: touching the lost
// bytes must end the process with the clear error and exit 1, not SIGBUS.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "io/gguf.h"
#include "io/gguf_writer.h"

using namespace ls;

TEST_CASE("map guard: a mapped file truncated under us is a clear error, not a crash") {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("ls_map_guard_" + std::to_string(getpid()) + ".gguf"))
          .string();
  GgufWriter w;
  w.set_str("general.architecture", "llama");
  w.add_tensor("big", GgmlType::F32, {1 << 20});  // 4 MiB, so its tail lies in pages of its own
  REQUIRE(w.create(path).ok());
  std::vector<uint8_t> data(w.tensor_bytes(0), 1);
  REQUIRE(w.write_tensor(0, data).ok());
  REQUIRE(w.finish().ok());

  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // Child: map, shrink the file, touch the last byte of the tensor.
    auto f = GgufFile::open(path);
    if (!f) _exit(3);
    if (truncate(path.c_str(), 4096) != 0) _exit(4);
    const GgufTensor* t = (*f)->find_tensor("big");
    volatile uint8_t x = (*f)->tensor_data(*t).back();
    (void)x;
    _exit(0);  // not reached: the read faults
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK_FALSE(WIFSIGNALED(status));  // no crash
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);  // the guard's clean exit
  std::filesystem::remove(path);
}
