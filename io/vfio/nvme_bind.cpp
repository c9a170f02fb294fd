// plan_bind / plan_unbind / apply_plan: see nvme_bind.h.
#include "io/vfio/nvme_bind.h"

#include <unistd.h>

#include <cerrno>
#include <sstream>

#include "io/vfio/disk_guard.h"

namespace ls {
namespace {

std::string dev_dir(const std::string& address) {
  return "/sys/bus/pci/devices/" + address;
}

// Missing root shows before anything is written: check every target.
void check_writable(const SysFs& fs, DriverPlan& p) {
  for (const auto& w : p.writes) {
    if (!fs.exists(w.path)) {
      p.missing.push_back("no " + w.path + " (" +
                          (w.path.find("driver_override") != std::string::npos
                               ? std::string("the kernel is older than 3.16")
                               : std::string("is the driver loaded?")) +
                          ")");
    } else if (::access(fs.path(w.path).c_str(), W_OK) != 0) {
      p.missing.push_back(write_error_hint(w.path, errno));
    }
  }
}

void add_moves(DriverPlan& p, const std::string& override_value) {
  const std::string dev = dev_dir(p.address);
  p.writes.push_back({dev + "/driver_override", override_value});
  if (!p.from.empty())
    p.writes.push_back({"/sys/bus/pci/drivers/" + p.from + "/unbind", p.address});
  p.writes.push_back({"/sys/bus/pci/drivers_probe", p.address});
}

}  // namespace

Expected<DriverPlan> plan_bind(const SysFs& fs, const std::string& address) {
  auto c = scan_nvme_controller(fs, address);
  if (!c) return c.error();
  DriverPlan p;
  p.address = address;
  p.from = c->driver;
  p.to = "vfio-pci";
  if (c->driver == "vfio-pci") {
    p.nothing_to_do = true;
    return p;
  }
  p.refusals = bind_refusals(*c);
  if (fs.list("/sys/kernel/iommu_groups").empty())
    p.missing.push_back(
        "no IOMMU: /sys/kernel/iommu_groups is empty; enable VT-d / AMD-Vi in the firmware and "
        "boot with intel_iommu=on (or amd_iommu=on); a QEMU guest needs -device "
        "intel-iommu,intremap=on");
  else if (c->iommu_group.empty())
    p.missing.push_back(address + " has no IOMMU group (no " + dev_dir(address) +
                        "/iommu_group link)");
  if (!fs.exists("/sys/bus/pci/drivers/vfio-pci"))
    p.missing.push_back(
        "the vfio-pci driver is not loaded (no /sys/bus/pci/drivers/vfio-pci): "
        "modprobe vfio-pci");
  for (const auto& peer : c->group_peers) {
    if (peer.driver.empty() || peer.driver == "vfio-pci" || peer.driver == "pci-stub" ||
        peer.driver == "pcieport")
      continue;
    p.notes.push_back("IOMMU group " + c->iommu_group + " also holds " + peer.address +
                      ", bound to " + peer.driver +
                      ": VFIO will refuse the group until it is bound to vfio-pci or to no driver");
  }
  add_moves(p, "vfio-pci");
  // Undo: clear the override and let the kernel pick nvme again.
  p.undo = {{dev_dir(address) + "/driver_override", "\n"}, {"/sys/bus/pci/drivers_probe", address}};
  check_writable(fs, p);
  return p;
}

Expected<DriverPlan> plan_unbind(const SysFs& fs, const std::string& address) {
  auto c = scan_nvme_controller(fs, address);
  if (!c) return c.error();
  DriverPlan p;
  p.address = address;
  p.from = c->driver;
  p.to = "nvme";
  if (c->driver == "nvme") {
    p.nothing_to_do = true;
    return p;
  }
  if (!fs.exists("/sys/bus/pci/drivers/nvme"))
    p.missing.push_back(
        "the nvme driver is not loaded (no /sys/bus/pci/drivers/nvme): modprobe nvme");
  if (c->driver == "vfio-pci")
    p.notes.push_back("the unbind waits until no process holds /dev/vfio/" + c->iommu_group +
                      " (stop any layerstream using it first)");
  // An empty override ("\n") lets the kernel match the nvme driver by class.
  add_moves(p, "\n");
  p.undo = {{dev_dir(address) + "/driver_override", p.from.empty() ? "\n" : p.from},
            {"/sys/bus/pci/drivers_probe", address}};
  check_writable(fs, p);
  return p;
}

Status apply_plan(const SysFs& fs, const DriverPlan& p) {
  if (p.nothing_to_do) return ok();
  if (!p.allowed()) return make_error("refusing to move %s to %s", p.address.c_str(), p.to.c_str());
  for (size_t i = 0; i < p.writes.size(); ++i) {
    Status s = fs.write(p.writes[i].path, p.writes[i].value);
    if (s) continue;
    std::string undo_failed;
    if (i > 0)
      for (const auto& u : p.undo) {
        Status us = fs.write(u.path, u.value);
        if (!us) undo_failed += "; undo failed too: " + us.error().message;
      }
    return make_error("%s%s%s", s.error().message.c_str(), i > 0 ? " (earlier writes undone)" : "",
                      undo_failed.c_str());
  }
  return ok();
}

std::string format_plan(const DriverPlan& p, bool dry_run) {
  std::ostringstream o;
  const std::string from = p.from.empty() ? "no driver" : p.from;
  if (p.nothing_to_do) {
    o << p.address << " is already bound to " << p.to << ": nothing to do\n";
    return o.str();
  }
  o << p.address << ": " << from << " -> " << p.to << "\n";
  if (!p.refusals.empty()) {
    o << "refused: the drive may hold data (no override: erase it with the kernel driver "
         "first):\n";
    for (const auto& r : p.refusals) o << "  - " << r << "\n";
  }
  if (!p.missing.empty()) {
    o << "missing:\n";
    for (const auto& m : p.missing) o << "  - " << m << "\n";
  }
  for (const auto& n : p.notes) o << "note: " << n << "\n";
  if (p.refusals.empty()) {
    for (const auto& w : p.writes) {
      std::string v = w.value == "\n" ? "(empty: clears it)" : "\"" + w.value + "\"";
      o << (dry_run ? "would write " : "write ") << v << " to " << w.path << "\n";
    }
  }
  return o.str();
}

}  // namespace ls
