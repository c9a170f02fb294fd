// The kernel's view of PCI devices, read and written through sysfs, /dev and
// /proc, every path taken relative to a root directory ("/" in production) so
// the unit tests run the same code on a fake tree of regular files under a
// temporary directory. Writes go to attributes that exist (never created) and
// their errors name the path and what is missing (root, a loaded driver).
// defines: SysFs, write_error_hint()
#pragma once

#include <string>
#include <vector>

#include "runtime/status.h"

namespace ls {

class SysFs {
 public:
  explicit SysFs(std::string root = "/");

  // "/sys/bus/pci" -> "<root>/sys/bus/pci"
  std::string path(const std::string& abs) const;
  bool exists(const std::string& abs) const;
  // The file's text without the trailing newline; an error names the path.
  Expected<std::string> read(const std::string& abs) const;
  // read(), or `fallback` when the file is missing or unreadable.
  std::string read_or(const std::string& abs, const std::string& fallback) const;
  // The last component of a symbolic link's target ("driver" -> "nvme"); "" if no link.
  std::string link_name(const std::string& abs) const;
  // Names in a directory, sorted; empty when it does not exist.
  std::vector<std::string> list(const std::string& abs) const;
  // Write `value` to an existing attribute (O_WRONLY|O_TRUNC, no O_CREAT).
  Status write(const std::string& abs, const std::string& value) const;

  const std::string& root() const { return root_; }

 private:
  std::string root_;  // without a trailing slash; "" for "/"
};

// What an errno from writing a sysfs attribute means for the user.
std::string write_error_hint(const std::string& abs, int err);

}  // namespace ls
