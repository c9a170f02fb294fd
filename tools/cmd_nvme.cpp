// layerstream nvme status|bind|unbind: set up a dedicated NVMe drive for the
// VFIO reader without risking anyone's data. status lists the controllers and
// what they hold; bind moves one from the nvme driver to vfio-pci only when
// nothing is on it (io/vfio/disk_guard); unbind gives it back. Both have
// --dry-run; --root points at a fake tree of sysfs, /dev and /proc (tests).
#include <cstdio>
#include <memory>
#include <string>

#include "io/vfio/nvme_bind.h"       // defines: plan_bind, plan_unbind, apply_plan
#include "io/vfio/nvme_inventory.h"  // defines: scan_nvme, format_inventory
#include "tools/commands.h"

namespace ls {
namespace {

struct NvmeArgs {
  std::string root = "/";
  std::string address;
  bool dry_run = false;
};

int run_status(const NvmeArgs& a) {
  std::fputs(format_inventory(scan_nvme(SysFs(a.root))).c_str(), stdout);
  return 0;
}

int run_move(const NvmeArgs& a, bool bind) {
  const SysFs fs(a.root);
  auto plan = bind ? plan_bind(fs, a.address) : plan_unbind(fs, a.address);
  if (!plan) {
    std::fprintf(stderr, "error: %s\n", plan.error().message.c_str());
    return 1;
  }
  std::fputs(format_plan(*plan, a.dry_run).c_str(), stdout);
  if (plan->nothing_to_do) return 0;
  if (!plan->refusals.empty()) {
    std::fprintf(stderr, "error: refusing to bind %s to vfio-pci\n", a.address.c_str());
    return 1;
  }
  if (!plan->missing.empty()) {
    std::fprintf(stderr, "error: cannot move %s to %s until the above is fixed\n",
                 a.address.c_str(), plan->to.c_str());
    return 1;
  }
  if (a.dry_run) return 0;
  if (Status s = apply_plan(fs, *plan); !s) {
    std::fprintf(stderr, "error: %s\n", s.error().message.c_str());
    return 1;
  }
  // The kernel probes synchronously on a write to drivers_probe: check it took.
  const std::string now = fs.link_name("/sys/bus/pci/devices/" + a.address + "/driver");
  if (now != plan->to) {
    std::fprintf(stderr, "error: %s is bound to %s after drivers_probe, not %s (see dmesg)\n",
                 a.address.c_str(), now.empty() ? "no driver" : now.c_str(), plan->to.c_str());
    return 1;
  }
  const std::string group = fs.link_name("/sys/bus/pci/devices/" + a.address + "/iommu_group");
  if (bind)
    std::printf("%s is bound to vfio-pci (IOMMU group %s, /dev/vfio/%s)\n", a.address.c_str(),
                group.c_str(), group.c_str());
  else
    std::printf("%s is bound to nvme\n", a.address.c_str());
  return 0;
}

}  // namespace

Command add_nvme(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "nvme", "Set up an NVMe drive for --reader vfio: list controllers, bind to vfio-pci, unbind");
  sub->require_subcommand(1);
  auto a = std::make_shared<NvmeArgs>();
  auto which = std::make_shared<std::string>();
  auto root_opt = [&](CLI::App* s) {
    s->add_option("--root", a->root, "Where sysfs, /dev and /proc are (for tests)")
        ->group("")  // hidden
        ->capture_default_str();
  };
  auto* status = sub->add_subcommand(
      "status", "List NVMe controllers: driver, IOMMU group, namespaces, partitions, mounts");
  root_opt(status);
  status->callback([which] { *which = "status"; });
  auto* bind = sub->add_subcommand(
      "bind", "Move a controller to vfio-pci, only if none of its namespaces holds anything");
  bind->add_option("ADDRESS", a->address, "PCI address, e.g. 0000:00:04.0")->required();
  bind->add_flag("--dry-run", a->dry_run, "Print the checks and what would be written where");
  root_opt(bind);
  bind->callback([which] { *which = "bind"; });
  auto* unbind = sub->add_subcommand("unbind", "Give a controller back to the nvme driver");
  unbind->add_option("ADDRESS", a->address, "PCI address, e.g. 0000:00:04.0")->required();
  unbind->add_flag("--dry-run", a->dry_run, "Print what would be written where");
  root_opt(unbind);
  unbind->callback([which] { *which = "unbind"; });
  return [a, which] {
    if (*which == "status") return run_status(*a);
    return run_move(*a, *which == "bind");
  };
}

}  // namespace ls
