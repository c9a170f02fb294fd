// The block source over a userspace NVMe controller (--reader vfio --nvme
// PCI_ADDRESS --nvme-lba N): the model file was written to the namespace at
// LBA N (dd, while the kernel driver held it), and reads go from user space
// through the controller's queues straight into the reader's staging
// buffers, mapped for the device through VFIO. No file system, block layer
// or page cache.
//
// Before anything is read the namespace is checked against the GGUF given by
// -m (io/raw_gguf.h). The staging buffers must be registered
// (register_buffers maps them into the IOMMU); a read into other memory is
// an error, not a silent bounce. Reads complete in wait(), one request at a
// time, each split into commands of at most MDTS (and --read-chunk) that the
// controller keeps in flight together up to --read-qd. The controller is
// shut down (CC.EN = 0) and every mapping released when the source goes,
// also after an error.
// defines: open_vfio_source()
#pragma once

#include <memory>
#include <string>

#include "io/block_source.h"

namespace ls {

// path: the GGUF file (-m), for the check and the size; o.nvme, o.nvme_lba:
// where its copy is.
Expected<std::unique_ptr<BlockSource>> open_vfio_source(const std::string& path,
                                                        const SourceOptions& o);

}  // namespace ls
