// The rule that keeps `layerstream nvme bind` from taking a drive that holds
// anything: a controller goes to vfio-pci only if the nvme driver shows us
// every namespace and none has a partition, a partition table, a file system,
// swap or volume signature, a mount, active swap, a holder (device mapper,
// md) or the / or /boot file system — and each namespace's first bytes could
// be read. There is no override: erase the drive with the kernel driver first.
// defines: bind_refusals()
#pragma once

#include <string>
#include <vector>

#include "io/vfio/nvme_inventory.h"

namespace ls {

// Every reason not to hand this controller to vfio-pci, each naming the
// namespace and what it holds; empty when it is safe.
std::vector<std::string> bind_refusals(const NvmePciController& c);

}  // namespace ls
