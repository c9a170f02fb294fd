// scan_nvme: sysfs first (controllers, namespaces, partitions, holders), then
// /proc/mounts and /proc/swaps matched by device name, / and /boot also by
// device number (a root mounted as /dev/root names no device), then the first
// bytes of each namespace.
#include "io/vfio/nvme_inventory.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <regex>
#include <sstream>
#include <vector>

#include "io/vfio/disk_guard.h"
#include "io/vfio/disk_signature.h"
#include "runtime/units.h"

namespace ls {
namespace {

constexpr const char* kNvmeClass = "0x010802";

// /proc/mounts escapes blanks in paths as octal (\040).
std::string unescape_octal(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto octal = [&](size_t k) { return s[k] >= '0' && s[k] <= '7'; };
    if (s[i] == '\\' && i + 3 < s.size() && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

struct MountEntry {
  std::string device, mountpoint;
};

std::vector<MountEntry> read_mounts(const SysFs& fs) {
  std::vector<MountEntry> out;
  std::istringstream in(fs.read_or("/proc/mounts", ""));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    MountEntry m;
    if (f >> m.device >> m.mountpoint)
      out.push_back({unescape_octal(m.device), unescape_octal(m.mountpoint)});
  }
  return out;
}

std::vector<std::string> read_swaps(const SysFs& fs) {
  std::vector<std::string> out;
  std::istringstream in(fs.read_or("/proc/swaps", ""));
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string dev;
    if (f >> dev) out.push_back(unescape_octal(dev));
  }
  return out;
}

std::string dev_name(const std::string& path) {
  return path.rfind("/dev/", 0) == 0 ? path.substr(5) : "";
}

// "major:minor" of the file system holding `abs` (under the root), "" if none.
std::string devnum_of_mount(const SysFs& fs, const std::string& abs) {
  struct stat st {};
  if (::stat(fs.path(abs).c_str(), &st) != 0) return "";
  return std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
}

void check_first_bytes(const SysFs& fs, NvmeNamespace& ns) {
  const std::string dev = "/dev/" + ns.name;
  const int fd = ::open(fs.path(dev).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    ns.unchecked = "cannot read " + dev + ": " + std::strerror(err);
    if (err == EACCES || err == EPERM) ns.unchecked += " (run as root)";
    return;
  }
  std::vector<uint8_t> buf(kSignatureProbeBytes);
  size_t got = 0;
  while (got < buf.size()) {
    const ssize_t n = ::pread(fd, buf.data() + got, buf.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ns.unchecked = "cannot read " + dev + ": " + std::strerror(errno);
      ::close(fd);
      return;
    }
    if (n == 0) break;  // a namespace smaller than the probe
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  ns.signature = find_disk_signature(buf.data(), got);
}

bool is_namespace_entry(const std::string& name) {
  static const std::regex re("nvme[0-9]+(c[0-9]+)?n[0-9]+");
  return std::regex_match(name, re);
}

// nvme<subsys>c<ctrl>n<ns> is the hidden path of a multipath namespace; its
// block device is nvme<subsys>n<ns>.
std::string block_name(const std::string& entry) {
  static const std::regex re("(nvme[0-9]+)c[0-9]+(n[0-9]+)");
  return std::regex_replace(entry, re, "$1$2");
}

NvmeNamespace scan_namespace(const SysFs& fs, const std::string& name,
                             const std::vector<MountEntry>& mounts,
                             const std::vector<std::string>& swaps, const std::string& root_dev,
                             const std::string& boot_dev) {
  NvmeNamespace ns;
  ns.name = name;
  const std::string blk = "/sys/block/" + name;
  ns.devnum = fs.read_or(blk + "/dev", "");
  // sysfs counts 512-byte sectors whatever the block size.
  ns.bytes = std::strtoull(fs.read_or(blk + "/size", "0").c_str(), nullptr, 10) * 512;
  ns.block_bytes = static_cast<uint32_t>(
      std::strtoul(fs.read_or(blk + "/queue/logical_block_size", "0").c_str(), nullptr, 10));

  // The namespace itself and each partition: mounts, swap, holders, / and /boot.
  std::vector<std::pair<std::string, std::string>> parts = {{name, ns.devnum}};
  for (const auto& e : fs.list(blk)) {
    if (e.rfind(name, 0) == 0 && fs.exists(blk + "/" + e + "/partition")) {
      ns.partitions.push_back(e);
      parts.emplace_back(e, fs.read_or(blk + "/" + e + "/dev", ""));
    }
  }
  for (const auto& [part, devnum] : parts) {
    const std::string sys = part == name ? blk : blk + "/" + part;
    for (const auto& m : mounts) {
      if (dev_name(m.device) != part) continue;
      ns.uses.push_back(part + " is mounted on " + m.mountpoint);
      if (m.mountpoint == "/") ns.holds_root = true;
      if (m.mountpoint == "/boot" || m.mountpoint == "/boot/efi") ns.holds_boot = true;
    }
    for (const auto& s : swaps)
      if (dev_name(s) == part) ns.uses.push_back(part + " is active swap");
    for (const auto& h : fs.list(sys + "/holders")) ns.uses.push_back(part + " is held by " + h);
    if (!devnum.empty() && devnum == root_dev) ns.holds_root = true;
    if (!devnum.empty() && devnum == boot_dev) ns.holds_boot = true;
  }
  check_first_bytes(fs, ns);
  return ns;
}

}  // namespace

Expected<NvmePciController> scan_nvme_controller(const SysFs& fs, const std::string& address) {
  const std::string dev = "/sys/bus/pci/devices/" + address;
  if (!fs.exists(dev))
    return make_error("no PCI device %s (no %s; `layerstream nvme status` lists NVMe controllers)",
                      address.c_str(), dev.c_str());
  const std::string cls = fs.read_or(dev + "/class", "");
  if (cls != kNvmeClass)
    return make_error("PCI device %s is not an NVMe controller (class %s, not %s)", address.c_str(),
                      cls.empty() ? "unknown" : cls.c_str(), kNvmeClass);
  NvmePciController c;
  c.address = address;
  c.vendor_id = fs.read_or(dev + "/vendor", "");
  c.device_id = fs.read_or(dev + "/device", "");
  c.driver = fs.link_name(dev + "/driver");
  c.iommu_group = fs.link_name(dev + "/iommu_group");
  if (!c.iommu_group.empty()) {
    for (const auto& peer : fs.list("/sys/kernel/iommu_groups/" + c.iommu_group + "/devices"))
      if (peer != address)
        c.group_peers.push_back({peer, fs.link_name("/sys/bus/pci/devices/" + peer + "/driver")});
  }
  if (c.driver != "nvme") return c;  // namespaces are visible only through the nvme driver

  const auto names = fs.list(dev + "/nvme");
  if (names.empty()) return c;
  c.name = names.front();
  const std::string cls_dir = "/sys/class/nvme/" + c.name;
  c.model = fs.read_or(cls_dir + "/model", "");
  c.serial = fs.read_or(cls_dir + "/serial", "");
  c.firmware = fs.read_or(cls_dir + "/firmware_rev", "");

  const auto mounts = read_mounts(fs);
  const auto swaps = read_swaps(fs);
  const std::string root_dev = devnum_of_mount(fs, "/");
  const std::string boot_dev = devnum_of_mount(fs, "/boot");
  for (const auto& e : fs.list(cls_dir)) {
    if (!is_namespace_entry(e)) continue;
    c.namespaces.push_back(scan_namespace(fs, block_name(e), mounts, swaps, root_dev,
                                          boot_dev == root_dev ? "" : boot_dev));
  }
  return c;
}

NvmeInventory scan_nvme(const SysFs& fs) {
  NvmeInventory inv;
  inv.iommu = !fs.list("/sys/kernel/iommu_groups").empty();
  inv.vfio_pci_loaded = fs.exists("/sys/bus/pci/drivers/vfio-pci");
  inv.nvme_loaded = fs.exists("/sys/bus/pci/drivers/nvme");
  for (const auto& addr : fs.list("/sys/bus/pci/devices")) {
    if (fs.read_or("/sys/bus/pci/devices/" + addr + "/class", "") != kNvmeClass) continue;
    auto c = scan_nvme_controller(fs, addr);
    if (c) inv.controllers.push_back(std::move(*c));
  }
  return inv;
}

std::string format_inventory(const NvmeInventory& inv) {
  std::ostringstream o;
  o << "IOMMU: "
    << (inv.iommu ? "on"
                  : "none (/sys/kernel/iommu_groups is empty): enable VT-d / AMD-Vi in the "
                    "firmware and boot with intel_iommu=on (or amd_iommu=on)")
    << "\n";
  o << "vfio-pci driver: " << (inv.vfio_pci_loaded ? "loaded" : "not loaded (modprobe vfio-pci)")
    << "\n";
  if (inv.controllers.empty()) {
    o << "no NVMe controllers (no PCI device of class 0x010802)\n";
    return o.str();
  }
  for (const auto& c : inv.controllers) {
    o << "\n" << c.address;
    if (!c.name.empty()) o << "  " << c.name;
    if (!c.model.empty()) o << "  model \"" << c.model << "\"";
    if (!c.serial.empty()) o << "  serial " << c.serial;
    if (!c.firmware.empty()) o << "  firmware " << c.firmware;
    o << "  (" << c.vendor_id << ":" << c.device_id << ")\n";
    o << "  driver: " << (c.driver.empty() ? "none" : c.driver) << "\n";
    o << "  IOMMU group: ";
    if (c.iommu_group.empty()) {
      o << "none (no iommu_group link)\n";
    } else {
      o << c.iommu_group;
      if (c.group_peers.empty()) o << " (alone in it)";
      for (const auto& p : c.group_peers)
        o << ", shared with " << p.address << " (" << (p.driver.empty() ? "no driver" : p.driver)
          << ")";
      o << "\n";
    }
    if (c.driver != "nvme") {
      o << "  namespaces: not visible: the nvme driver is not bound to it\n";
    } else if (c.namespaces.empty()) {
      o << "  namespaces: none\n";
    }
    for (const auto& ns : c.namespaces) {
      o << "  " << ns.name << ": " << human_bytes(ns.bytes);
      if (ns.block_bytes)
        o << " (" << ns.bytes / ns.block_bytes << " blocks of " << ns.block_bytes << " B)";
      o << "\n";
      o << "    partitions: ";
      if (ns.partitions.empty()) o << "none";
      for (size_t i = 0; i < ns.partitions.size(); ++i) o << (i ? ", " : "") << ns.partitions[i];
      o << "\n";
      o << "    contents: "
        << (!ns.unchecked.empty()  ? "not checked: " + ns.unchecked
            : ns.signature.empty() ? std::string("no partition table or file system found")
                                   : ns.signature)
        << "\n";
      for (const auto& u : ns.uses) o << "    in use: " << u << "\n";
      if (ns.holds_root) o << "    holds /\n";
      if (ns.holds_boot) o << "    holds /boot\n";
    }
    if (c.driver == "vfio-pci") {
      o << "  bind: already bound to vfio-pci\n";
    } else {
      const auto why = bind_refusals(c);
      if (why.empty()) {
        o << "  bind: allowed\n";
      } else {
        o << "  bind: refused:\n";
        for (const auto& w : why) o << "    - " << w << "\n";
      }
    }
  }
  return o.str();
}

}  // namespace ls
