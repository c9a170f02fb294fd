// SysFs: plain POSIX calls on root-relative paths.
#include "io/vfio/pci_sysfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ls {

SysFs::SysFs(std::string root) : root_(std::move(root)) {
  while (!root_.empty() && root_.back() == '/') root_.pop_back();
}

std::string SysFs::path(const std::string& abs) const {
  return root_ + abs;
}

bool SysFs::exists(const std::string& abs) const {
  return ::access(path(abs).c_str(), F_OK) == 0;
}

Expected<std::string> SysFs::read(const std::string& abs) const {
  const int fd = ::open(path(abs).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error("cannot read %s: %s", abs.c_str(), std::strerror(errno));
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return make_error("cannot read %s: %s", abs.c_str(), std::strerror(err));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::string SysFs::read_or(const std::string& abs, const std::string& fallback) const {
  auto r = read(abs);
  return r ? *r : fallback;
}

std::string SysFs::link_name(const std::string& abs) const {
  char buf[4096];
  const ssize_t n = ::readlink(path(abs).c_str(), buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string target(buf, static_cast<size_t>(n));
  const size_t slash = target.rfind('/');
  return slash == std::string::npos ? target : target.substr(slash + 1);
}

std::vector<std::string> SysFs::list(const std::string& abs) const {
  std::vector<std::string> names;
  DIR* d = ::opendir(path(abs).c_str());
  if (!d) return names;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
      names.emplace_back(e->d_name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

Status SysFs::write(const std::string& abs, const std::string& value) const {
  const int fd = ::open(path(abs).c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return make_error("%s", write_error_hint(abs, errno).c_str());
  // sysfs takes an attribute in one write; a short write is an error.
  const ssize_t n = ::write(fd, value.data(), value.size());
  const int err = errno;
  ::close(fd);
  if (n < 0) return make_error("%s", write_error_hint(abs, err).c_str());
  if (static_cast<size_t>(n) != value.size())
    return make_error("short write to %s (%zd of %zu bytes)", abs.c_str(), n, value.size());
  return ok();
}

std::string write_error_hint(const std::string& abs, int err) {
  std::string msg = "cannot write " + abs + ": " + std::strerror(err);
  if (err == EACCES || err == EPERM)
    msg += " (changing a device's driver needs root: run this command with sudo)";
  else if (err == ENOENT)
    msg += " (no such attribute: is the driver loaded? modprobe vfio-pci / modprobe nvme)";
  else if (err == ENODEV || err == EINVAL)
    msg += " (the kernel refused the value)";
  return msg;
}

}  // namespace ls
