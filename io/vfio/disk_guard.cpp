// bind_refusals: one line per finding, so the user sees all of them at once.
#include "io/vfio/disk_guard.h"

namespace ls {

// "a GPT partition table", "an ext2/3/4 file system": the article as the
// signature's name is read aloud (io/vfio/disk_signature.cpp's names).
static std::string with_article(const std::string& what) {
  for (const char* an : {"ext", "exFAT", "XFS", "LVM", "NTFS", "MBR"})
    if (what.rfind(an, 0) == 0) return "an " + what;
  return "a " + what;
}


std::vector<std::string> bind_refusals(const NvmePciController& c) {
  std::vector<std::string> why;
  if (c.driver.empty()) {
    why.push_back(c.address +
                  " is bound to no driver, so its namespaces cannot be checked: give it to the "
                  "nvme driver first (layerstream nvme unbind " +
                  c.address + ")");
    return why;
  }
  if (c.driver != "nvme" && c.driver != "vfio-pci") {
    why.push_back(c.address + " is bound to " + c.driver +
                  ", not nvme, so its namespaces cannot be checked");
    return why;
  }
  if (c.driver == "nvme" && c.name.empty()) {
    why.push_back(c.address +
                  " is bound to nvme but shows no controller (no nvme/ directory in sysfs), so its "
                  "namespaces cannot be checked");
    return why;
  }
  for (const auto& ns : c.namespaces) {
    if (!ns.partitions.empty()) {
      std::string list;
      for (const auto& p : ns.partitions) list += (list.empty() ? "" : ", ") + p;
      why.push_back(ns.name + " has partitions (" + list + ")");
    }
    if (!ns.signature.empty()) why.push_back(ns.name + " holds " + with_article(ns.signature));
    if (!ns.unchecked.empty())
      why.push_back(ns.name +
                    " could not be checked for a partition table or file system: " + ns.unchecked);
    for (const auto& u : ns.uses) why.push_back(u);
    if (ns.holds_root) why.push_back(ns.name + " holds the root file system /");
    if (ns.holds_boot) why.push_back(ns.name + " holds /boot");
  }
  return why;
}

}  // namespace ls
