// VFIO type1 plumbing: see vfio.h. Facts from the kernel's VFIO documentation
// (Documentation/driver-api/vfio.rst) and include/uapi/linux/vfio.h.
#include "io/vfio/vfio.h"

#include <fcntl.h>
#include <linux/pci_regs.h>
#include <linux/vfio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <vector>

#include "io/vfio/pci_sysfs.h"

namespace ls {
namespace {

// MMIO ordering. Before a register write, every earlier store to DMA memory
// (a submission queue entry) must be visible to the device; after a register
// read, later loads of DMA memory must not be hoisted above it. x86 keeps
// stores in order, uncached ones included, so only the compiler must be
// stopped; arm64 needs a data synchronization barrier.
inline void mmio_before_write() {
#if defined(__x86_64__) || defined(__i386__)
  std::atomic_signal_fence(std::memory_order_seq_cst);
#elif defined(__aarch64__)
  asm volatile("dsb st" ::: "memory");
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}
inline void mmio_after_read() {
#if defined(__x86_64__) || defined(__i386__)
  std::atomic_signal_fence(std::memory_order_seq_cst);
#elif defined(__aarch64__)
  asm volatile("dsb ld" ::: "memory");
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

constexpr uint64_t kPage = IovaAllocator::kPage;
uint64_t round_up(uint64_t x, uint64_t a) {
  return (x + a - 1) / a * a;
}

// Drivers that keep an IOMMU group viable besides vfio-pci (the kernel's
// allow-list: bridges and stub drivers never do DMA for a user).
bool driver_keeps_group_viable(const std::string& d) {
  return d.empty() || d == "vfio-pci" || d == "pci-stub" || d == "pcieport";
}

std::string memlock_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_MEMLOCK, &r) != 0) return "unknown";
  if (r.rlim_cur == RLIM_INFINITY) return "unlimited";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%llu KiB", static_cast<unsigned long long>(r.rlim_cur / 1024));
  return buf;
}

// The IOVA windows the IOMMU accepts, from VFIO_IOMMU_GET_INFO's capability
// chain (kernel 5.4+). Older kernels do not say: stay below the x86 MSI window
// (0xfee00000) and above 4 GiB up to 39 bits, which every VT-d unit covers.
std::vector<std::pair<uint64_t, uint64_t>> iova_windows(int container_fd) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  vfio_iommu_type1_info probe{};
  probe.argsz = sizeof probe;
  if (::ioctl(container_fd, VFIO_IOMMU_GET_INFO, &probe) == 0 && probe.argsz > sizeof probe) {
    std::vector<uint64_t> buf((probe.argsz + 7) / 8);  // u64: the caps hold u64 fields
    auto* info = reinterpret_cast<vfio_iommu_type1_info*>(buf.data());
    info->argsz = probe.argsz;
    if (::ioctl(container_fd, VFIO_IOMMU_GET_INFO, info) == 0 &&
        (info->flags & VFIO_IOMMU_INFO_CAPS)) {
      const auto* base = reinterpret_cast<const uint8_t*>(buf.data());
      for (uint32_t off = info->cap_offset;
           off && off + sizeof(vfio_info_cap_header) <= probe.argsz;) {
        const auto* h = reinterpret_cast<const vfio_info_cap_header*>(base + off);
        if (h->id == VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE) {
          const auto* c = reinterpret_cast<const vfio_iommu_type1_info_cap_iova_range*>(h);
          for (uint32_t i = 0; i < c->nr_iovas; ++i)  // `end` is inclusive
            out.emplace_back(c->iova_ranges[i].start, c->iova_ranges[i].end + 1);
        }
        if (h->next <= off) break;  // the chain only moves forward
        off = h->next;
      }
    }
  }
  if (out.empty()) out = {{1ull << 20, 0xfee00000ull}, {1ull << 32, 1ull << 39}};
  return out;
}

// How much of a region can be mmapped from its offset 0: all of it, or the
// sparse-mmap area starting at 0 when the region carries that capability.
uint64_t mappable_from_zero(int device_fd, const vfio_region_info& region) {
  if (!(region.flags & VFIO_REGION_INFO_FLAG_CAPS) || region.argsz <= sizeof region)
    return region.size;
  std::vector<uint64_t> buf((region.argsz + 7) / 8);
  auto* info = reinterpret_cast<vfio_region_info*>(buf.data());
  info->argsz = region.argsz;
  info->index = region.index;
  if (::ioctl(device_fd, VFIO_DEVICE_GET_REGION_INFO, info) != 0) return region.size;
  const auto* base = reinterpret_cast<const uint8_t*>(buf.data());
  for (uint32_t off = info->cap_offset;
       off && off + sizeof(vfio_info_cap_header) <= region.argsz;) {
    const auto* h = reinterpret_cast<const vfio_info_cap_header*>(base + off);
    if (h->id == VFIO_REGION_INFO_CAP_SPARSE_MMAP) {
      const auto* c = reinterpret_cast<const vfio_region_info_cap_sparse_mmap*>(h);
      for (uint32_t i = 0; i < c->nr_areas; ++i)
        if (c->areas[i].offset == 0) return c->areas[i].size;
      return 0;
    }
    if (h->next <= off) break;
    off = h->next;
  }
  return region.size;
}

}  // namespace

// ---- VfioRegs ------------------------------------------------------------------

uint32_t VfioRegs::read32(uint32_t offset) {
  if (offset % 4 || uint64_t{offset} + 4 > bytes_) return ++bad_, 0xffffffffu;
  const uint32_t v = *reinterpret_cast<volatile uint32_t*>(base_ + offset);
  mmio_after_read();
  return v;
}

uint64_t VfioRegs::read64(uint32_t offset) {
  const uint64_t lo = read32(offset);
  const uint64_t hi = read32(offset + 4);
  return lo | hi << 32;
}

void VfioRegs::write32(uint32_t offset, uint32_t value) {
  if (offset % 4 || uint64_t{offset} + 4 > bytes_) return void(++bad_);
  mmio_before_write();
  *reinterpret_cast<volatile uint32_t*>(base_ + offset) = value;
}

void VfioRegs::write64(uint32_t offset, uint64_t value) {
  write32(offset, static_cast<uint32_t>(value));
  write32(offset + 4, static_cast<uint32_t>(value >> 32));
}

// ---- VfioDma -------------------------------------------------------------------

VfioDma::~VfioDma() {
  std::lock_guard lock(mu_);
  // unmap_locked drops the record even when the unmap fails (it reports it).
  while (!maps_.empty()) (void)unmap_locked(maps_.begin()->first);
}

Expected<DmaBuffer> VfioDma::alloc(size_t bytes) {
  const size_t host_page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t size = round_up(bytes ? bytes : 1, std::max<size_t>(kPage, host_page));
  // Anonymous memory is zeroed and page-aligned; MAP_POPULATE because the
  // IOMMU mapping pins it anyway.
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED)
    return make_error("DMA memory of %zu bytes: mmap failed: %s", size, std::strerror(errno));
  std::lock_guard lock(mu_);
  auto iova = map_locked(p, size, true);
  if (!iova) {
    ::munmap(p, size);
    return iova.error();
  }
  return DmaBuffer{p, *iova, size};
}

void VfioDma::free(const DmaBuffer& b) {
  if (!b.host) return;
  std::lock_guard lock(mu_);
  auto it = maps_.find(reinterpret_cast<uintptr_t>(b.host));
  if (it == maps_.end() || !it->second.owned) {
    std::fprintf(stderr, "vfio: free of a buffer alloc() did not return (host %p)\n", b.host);
    return;
  }
  (void)unmap_locked(it->first);
}

Expected<uint64_t> VfioDma::map(void* host, size_t bytes) {
  std::lock_guard lock(mu_);
  return map_locked(host, bytes, false);
}

void VfioDma::unmap(void* host, size_t bytes) {
  (void)bytes;  // the mapping's own size: it is unmapped whole, as type1v2 requires
  std::lock_guard lock(mu_);
  auto it = maps_.find(reinterpret_cast<uintptr_t>(host));
  if (it == maps_.end() || it->second.owned) {
    std::fprintf(stderr, "vfio: unmap of memory map() did not map (host %p)\n", host);
    return;
  }
  (void)unmap_locked(it->first);
}

uint64_t VfioDma::iova_of(const void* host) const {
  const auto h = reinterpret_cast<uintptr_t>(host);
  std::lock_guard lock(mu_);
  auto it = maps_.upper_bound(h);
  if (it == maps_.begin()) return 0;
  --it;
  if (h - it->first >= it->second.bytes) return 0;
  return it->second.iova + (h - it->first);
}

size_t VfioDma::mappings() const {
  std::lock_guard lock(mu_);
  return maps_.size();
}

Expected<uint64_t> VfioDma::map_locked(void* host, size_t bytes, bool owned) {
  const auto h = reinterpret_cast<uintptr_t>(host);
  if (h % kPage) return make_error("DMA map of %p: the address is not 4 KiB aligned", host);
  if (bytes == 0) return make_error("DMA map of %p: 0 bytes", host);
  const uint64_t size = round_up(bytes, kPage);
  // Overlapping mappings would give one host byte two IOVAs: a caller bug.
  auto next = maps_.lower_bound(h);
  if (next != maps_.end() && next->first < h + size)
    return make_error("DMA map of %p (%" PRIu64 " bytes) overlaps a mapping at 0x%" PRIxPTR, host,
                      size, next->first);
  if (next != maps_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.bytes > h)
      return make_error("DMA map of %p overlaps a mapping at 0x%" PRIxPTR, host, prev->first);
  }
  auto iova = iovas_.alloc(size);
  if (!iova) return iova.error();
  vfio_iommu_type1_dma_map m{};
  m.argsz = sizeof m;
  // Both directions: the controller reads queues and PRP lists, writes
  // completions and read data.
  m.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
  m.vaddr = h;
  m.iova = *iova;
  m.size = size;
  if (::ioctl(fd_, VFIO_IOMMU_MAP_DMA, &m) != 0) {
    const int err = errno;
    iovas_.release(*iova, size);  // never mapped: safe to hand out again
    std::string hint;
    if (err == ENOMEM)
      hint = ": the locked-memory limit is too low (ulimit -l, now " + memlock_limit() +
             "; raise it or run as root)";
    else if (err == ENOSPC)
      hint = ": too many mappings (vfio_iommu_type1 dma_entry_limit)";
    else if (err == EFAULT)
      hint = ": the host range is not mapped in this process";
    return make_error("VFIO_IOMMU_MAP_DMA of %" PRIu64 " bytes at IOVA 0x%" PRIx64 " failed: %s%s",
                      size, *iova, std::strerror(err), hint.c_str());
  }
  maps_.emplace(h, Mapping{*iova, size, owned});
  return *iova;
}

Status VfioDma::unmap_locked(uintptr_t host) {
  auto it = maps_.find(host);
  if (it == maps_.end()) return make_error("no DMA mapping at 0x%" PRIxPTR, host);
  const Mapping m = it->second;
  vfio_iommu_type1_dma_unmap u{};
  u.argsz = sizeof u;
  u.iova = m.iova;
  u.size = m.bytes;
  const int rc = ::ioctl(fd_, VFIO_IOMMU_UNMAP_DMA, &u);
  if (rc != 0 || u.size != m.bytes) {
    // The controller may still reach this range: its IOVA is never reused,
    // and memory we own stays allocated.
    char why[128];
    if (rc != 0)
      std::snprintf(why, sizeof why, "%s", std::strerror(errno));
    else
      std::snprintf(why, sizeof why, "only %llu bytes unmapped",
                    static_cast<unsigned long long>(u.size));
    maps_.erase(it);
    Error e = make_error("VFIO_IOMMU_UNMAP_DMA of IOVA 0x%" PRIx64 " (%zu bytes) failed: %s",
                         m.iova, m.bytes, why);
    std::fprintf(stderr, "vfio: %s\n", e.message.c_str());  // free() and unmap() return nothing
    return e;
  }
  iovas_.release(m.iova, m.bytes);
  if (m.owned) ::munmap(reinterpret_cast<void*>(host), m.bytes);
  maps_.erase(it);
  return ok();
}

// ---- VfioDevice ----------------------------------------------------------------

Expected<std::unique_ptr<VfioDevice>> VfioDevice::open(const std::string& address,
                                                       const std::string& root) {
  const SysFs fs(root);
  const std::string dev = "/sys/bus/pci/devices/" + address;
  if (!fs.exists(dev))
    return make_error("no PCI device %s (%s is missing; `layerstream nvme status` lists them)",
                      address.c_str(), dev.c_str());
  const std::string group_name = fs.link_name(dev + "/iommu_group");
  if (group_name.empty()) {
    if (fs.list("/sys/kernel/iommu_groups").empty())
      return make_error(
          "no IOMMU: /sys/kernel/iommu_groups is empty; enable VT-d / AMD-Vi in the firmware and "
          "boot with intel_iommu=on (or amd_iommu=on); a QEMU guest needs -device intel-iommu");
    return make_error("device %s has no IOMMU group (no %s/iommu_group link)", address.c_str(),
                      dev.c_str());
  }
  const std::string driver = fs.link_name(dev + "/driver");
  if (driver != "vfio-pci")
    return make_error("device %s is bound to %s, not vfio-pci: run `layerstream nvme bind %s`",
                      address.c_str(), driver.empty() ? "no driver" : driver.c_str(),
                      address.c_str());

  std::unique_ptr<VfioDevice> d(new VfioDevice);  // its destructor undoes a partial open
  d->address_ = address;
  d->group_ = std::atoi(group_name.c_str());

  // The container.
  d->container_fd_ = ::open(fs.path("/dev/vfio/vfio").c_str(), O_RDWR | O_CLOEXEC);
  if (d->container_fd_ < 0) {
    const int err = errno;
    if (err == ENOENT)
      return make_error("no /dev/vfio/vfio: load the vfio module (modprobe vfio-pci)");
    if (err == EACCES || err == EPERM)
      return make_error("cannot open /dev/vfio/vfio: %s (run as root)", std::strerror(err));
    return make_error("cannot open /dev/vfio/vfio: %s", std::strerror(err));
  }
  const int api = ::ioctl(d->container_fd_, VFIO_GET_API_VERSION);
  if (api < 0)
    return make_error("/dev/vfio/vfio is not a VFIO container (VFIO_GET_API_VERSION: %s)",
                      std::strerror(errno));
  if (api != VFIO_API_VERSION)
    return make_error("/dev/vfio/vfio speaks VFIO API %d, this build knows %d", api,
                      VFIO_API_VERSION);
  // Type1v2 (unmaps whole mappings only, which is all we do) when offered, else type1.
  int iommu_type = 0;
  if (::ioctl(d->container_fd_, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) > 0)
    iommu_type = VFIO_TYPE1v2_IOMMU;
  else if (::ioctl(d->container_fd_, VFIO_CHECK_EXTENSION, VFIO_TYPE1_IOMMU) > 0)
    iommu_type = VFIO_TYPE1_IOMMU;
  else
    return make_error(
        "the VFIO container offers no type1 IOMMU: load vfio_iommu_type1 (modprobe "
        "vfio_iommu_type1)");

  // The group.
  const std::string group_dev = "/dev/vfio/" + group_name;
  d->group_fd_ = ::open(fs.path(group_dev).c_str(), O_RDWR | O_CLOEXEC);
  if (d->group_fd_ < 0) {
    const int err = errno;
    if (err == ENOENT)
      return make_error("no %s: no device of IOMMU group %s is bound to vfio-pci",
                        group_dev.c_str(), group_name.c_str());
    if (err == EBUSY)
      return make_error("%s is busy: another process has IOMMU group %s open", group_dev.c_str(),
                        group_name.c_str());
    if (err == EACCES || err == EPERM)
      return make_error("cannot open %s: %s (run as root)", group_dev.c_str(), std::strerror(err));
    return make_error("cannot open %s: %s", group_dev.c_str(), std::strerror(err));
  }
  vfio_group_status gs{};
  gs.argsz = sizeof gs;
  if (::ioctl(d->group_fd_, VFIO_GROUP_GET_STATUS, &gs) != 0)
    return make_error("VFIO_GROUP_GET_STATUS on %s failed: %s", group_dev.c_str(),
                      std::strerror(errno));
  if (!(gs.flags & VFIO_GROUP_FLAGS_VIABLE)) {
    std::string who;
    for (const auto& peer : fs.list("/sys/kernel/iommu_groups/" + group_name + "/devices")) {
      const std::string drv = fs.link_name("/sys/bus/pci/devices/" + peer + "/driver");
      if (!driver_keeps_group_viable(drv))
        who += (who.empty() ? "" : ", ") + ("device " + peer + " is still bound to " + drv);
    }
    if (who.empty()) who = "a device of the group is bound to a driver other than vfio-pci";
    return make_error(
        "group %s is not viable: %s (every device of the group must be bound to vfio-pci or to "
        "no driver)",
        group_name.c_str(), who.c_str());
  }
  if (::ioctl(d->group_fd_, VFIO_GROUP_SET_CONTAINER, &d->container_fd_) != 0)
    return make_error("VFIO_GROUP_SET_CONTAINER for group %s failed: %s", group_name.c_str(),
                      std::strerror(errno));
  if (::ioctl(d->container_fd_, VFIO_SET_IOMMU, iommu_type) != 0) {
    const int err = errno;
    if (err == EPERM)
      return make_error(
          "VFIO_SET_IOMMU type1 failed: EPERM: the IOMMU has no interrupt remapping, so the "
          "kernel refuses a user-space device (enable interrupt remapping; a QEMU guest needs "
          "-device intel-iommu,intremap=on; or, accepting the risk, load vfio_iommu_type1 with "
          "allow_unsafe_interrupts=1)");
    return make_error("VFIO_SET_IOMMU type1 failed: %s", std::strerror(err));
  }
  d->dma_ =
      std::make_unique<VfioDma>(d->container_fd_, IovaAllocator(iova_windows(d->container_fd_)));

  // The device.
  d->device_fd_ = ::ioctl(d->group_fd_, VFIO_GROUP_GET_DEVICE_FD, address.c_str());
  if (d->device_fd_ < 0)
    return make_error("VFIO_GROUP_GET_DEVICE_FD for %s failed: %s", address.c_str(),
                      std::strerror(errno));
  vfio_device_info di{};
  di.argsz = sizeof di;
  if (::ioctl(d->device_fd_, VFIO_DEVICE_GET_INFO, &di) != 0)
    return make_error("VFIO_DEVICE_GET_INFO for %s failed: %s", address.c_str(),
                      std::strerror(errno));
  if (!(di.flags & VFIO_DEVICE_FLAGS_PCI) || di.num_regions <= VFIO_PCI_CONFIG_REGION_INDEX)
    return make_error("%s is not a VFIO PCI device (flags 0x%x, %u regions)", address.c_str(),
                      di.flags, di.num_regions);

  vfio_region_info cfg{};
  cfg.argsz = sizeof cfg;
  cfg.index = VFIO_PCI_CONFIG_REGION_INDEX;
  if (::ioctl(d->device_fd_, VFIO_DEVICE_GET_REGION_INFO, &cfg) != 0)
    return make_error("config space region info of %s: %s", address.c_str(), std::strerror(errno));
  d->config_offset_ = cfg.offset;

  vfio_region_info bar{};
  bar.argsz = sizeof bar;
  bar.index = VFIO_PCI_BAR0_REGION_INDEX;
  if (::ioctl(d->device_fd_, VFIO_DEVICE_GET_REGION_INFO, &bar) != 0)
    return make_error("BAR0 region info of %s: %s", address.c_str(), std::strerror(errno));
  // 0x1000 of registers and at least the admin queue's two doorbells.
  if (bar.size < 0x1008)
    return make_error("BAR0 of %s is %llu bytes; an NVMe controller has at least 0x1008",
                      address.c_str(), static_cast<unsigned long long>(bar.size));
  if (!(bar.flags & VFIO_REGION_INFO_FLAG_MMAP))
    return make_error("BAR0 of %s cannot be mmapped (region flags 0x%x)", address.c_str(),
                      bar.flags);
  // The whole BAR maps since Linux 4.16; before, the MSI-X table was cut out
  // (a sparse-mmap capability): then map the area at offset 0, where the
  // registers and doorbells are.
  const uint64_t map_bytes = mappable_from_zero(d->device_fd_, bar);
  if (map_bytes < 0x1008)
    return make_error("BAR0 of %s maps only %llu bytes from offset 0; the registers need 0x1008",
                      address.c_str(), static_cast<unsigned long long>(map_bytes));
  void* p = ::mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, d->device_fd_,
                   static_cast<off_t>(bar.offset));
  if (p == MAP_FAILED)
    return make_error("mmap of BAR0 of %s (%llu bytes) failed: %s", address.c_str(),
                      static_cast<unsigned long long>(map_bytes), std::strerror(errno));
  d->bar_ = p;
  d->bar_bytes_ = map_bytes;
  d->regs_ = std::make_unique<VfioRegs>(static_cast<volatile uint8_t*>(p), map_bytes);

  // The controller reads queues and writes data only as a bus master.
  LS_TRY(d->set_bus_master(true));
  return d;
}

Status VfioDevice::set_bus_master(bool on) {
  uint16_t cmd = 0;
  const off_t at = static_cast<off_t>(config_offset_ + PCI_COMMAND);
  if (::pread(device_fd_, &cmd, sizeof cmd, at) != sizeof cmd)
    return make_error("reading the PCI command register of %s: %s", address_.c_str(),
                      std::strerror(errno));
  const uint16_t want = on ? static_cast<uint16_t>(cmd | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER)
                           : static_cast<uint16_t>(cmd & ~PCI_COMMAND_MASTER);
  if (want != cmd && ::pwrite(device_fd_, &want, sizeof want, at) != sizeof want)
    return make_error("writing the PCI command register of %s: %s", address_.c_str(),
                      std::strerror(errno));
  bus_master_set_ = on;
  return ok();
}

VfioDevice::~VfioDevice() {
  // Bus mastering off first: a controller the driver failed to disable can
  // then no longer reach memory we are about to unmap and free.
  if (bus_master_set_) (void)set_bus_master(false);
  dma_.reset();  // every IOVA unmapped while the container still exists
  regs_.reset();
  if (bar_) ::munmap(bar_, bar_bytes_);
  if (device_fd_ >= 0) ::close(device_fd_);
  if (group_fd_ >= 0) ::close(group_fd_);  // also takes the group out of the container
  if (container_fd_ >= 0) ::close(container_fd_);
}

}  // namespace ls
