// Which NVMe controllers this machine has and what they hold: PCI address,
// model, serial, current driver, IOMMU group (and who shares it), namespaces
// with sizes, partitions, mounts, swap, device-mapper/md holders, whether one
// holds / or /boot, and what its first bytes say (io/vfio/disk_signature).
// Read from sysfs, /proc/mounts, /proc/swaps and /dev/nvmeXnY under a root
// directory (SysFs), so tests build the machine as a tree of files.
// defines: NvmeNamespace, PciPeer, NvmePciController, NvmeInventory, scan_nvme(),
//          scan_nvme_controller(), format_inventory()
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/vfio/pci_sysfs.h"
#include "runtime/status.h"

namespace ls {

struct NvmeNamespace {
  std::string name;    // block device: "nvme0n1"
  std::string devnum;  // "259:0"
  uint64_t bytes = 0;
  uint32_t block_bytes = 0;             // logical block size
  std::vector<std::string> partitions;  // "nvme0n1p1", ...
  // Why the kernel or the user is using it: "nvme0n1p1 is mounted on /boot",
  // "nvme0n1p3 is active swap", "nvme0n1 is held by dm-0".
  std::vector<std::string> uses;
  bool holds_root = false, holds_boot = false;
  std::string signature;  // what its first bytes hold; "" for nothing known
  std::string unchecked;  // why its first bytes could not be read; "" when they were
};

struct PciPeer {
  std::string address, driver;  // driver "" when none
};

struct NvmePciController {
  std::string address;  // "0000:00:04.0"
  std::string vendor_id, device_id;
  std::string driver;                // "nvme", "vfio-pci", "" for none
  std::string iommu_group;           // "7"; "" when the device has none
  std::vector<PciPeer> group_peers;  // the other devices of its IOMMU group
  // From /sys/class/nvme/<name>/ while the nvme driver holds it.
  std::string name;  // "nvme0"
  std::string model, serial, firmware;
  std::vector<NvmeNamespace> namespaces;
};

struct NvmeInventory {
  bool iommu = false;            // /sys/kernel/iommu_groups has groups
  bool vfio_pci_loaded = false;  // /sys/bus/pci/drivers/vfio-pci
  bool nvme_loaded = false;      // /sys/bus/pci/drivers/nvme
  std::vector<NvmePciController> controllers;
};

// Every PCI device of class 0x010802 (mass storage, NVM, NVMe).
NvmeInventory scan_nvme(const SysFs& fs);
// One controller; an error when the address is no PCI device or no NVMe one.
Expected<NvmePciController> scan_nvme_controller(const SysFs& fs, const std::string& address);
// What `layerstream nvme status` prints.
std::string format_inventory(const NvmeInventory& inv);

}  // namespace ls
