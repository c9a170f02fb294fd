// Moving an NVMe controller between the kernel's nvme driver and vfio-pci, as
// a plan first (what would be written where, and every reason to refuse),
// then the writes: driver_override, unbind from the current driver,
// drivers_probe. `--dry-run` prints the plan; a failed write is rolled back
// (override cleared, the device probed again) so the drive never stays
// driverless by our hand.
// defines: SysfsWrite, DriverPlan, plan_bind(), plan_unbind(), apply_plan(),
//          format_plan()
#pragma once

#include <string>
#include <vector>

#include "io/vfio/nvme_inventory.h"
#include "io/vfio/pci_sysfs.h"
#include "runtime/status.h"

namespace ls {

struct SysfsWrite {
  std::string path;  // absolute, as on the real machine
  std::string value;
};

struct DriverPlan {
  std::string address;
  std::string from, to;               // drivers: "nvme" -> "vfio-pci"; "" for none
  bool nothing_to_do = false;         // already bound to `to`
  std::vector<std::string> refusals;  // the drive holds something (disk_guard): never done
  std::vector<std::string> missing;   // root, IOMMU, a driver: done once fixed
  std::vector<std::string> notes;     // worth knowing, not blocking
  std::vector<SysfsWrite> writes;     // in order
  std::vector<SysfsWrite> undo;       // after a failed write, best effort
  bool allowed() const { return refusals.empty() && missing.empty(); }
};

// nvme -> vfio-pci, only when bind_refusals() finds nothing.
Expected<DriverPlan> plan_bind(const SysFs& fs, const std::string& address);
// back to nvme.
Expected<DriverPlan> plan_unbind(const SysFs& fs, const std::string& address);
// Perform the writes of an allowed plan.
Status apply_plan(const SysFs& fs, const DriverPlan& plan);
// The plan as text; dry_run: "would write" instead of "writes".
std::string format_plan(const DriverPlan& plan, bool dry_run);

}  // namespace ls
