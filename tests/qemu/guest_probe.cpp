// ls_qemu_guest: the program tests/qemu/run.sh runs inside the QEMU guest.
// For now a probe that proves the VFIO path works end to end without the
// userspace NVMe driver: bind the controller to vfio-pci, open it through
// VFIO type1, map BAR0, read CAP and VS, give it back to the nvme driver.
// The real VFIO reader test replaces it.
//
//   ls_qemu_guest PCI_ADDRESS [--dma-fault]
//
// --dma-fault makes the controller fetch a command from an IOVA that is not
// mapped, so that run.sh can prove its DMAR fault detector sees a fault.
// Prints "LS_GUEST PASS" when every step worked; any failure prints
// "LS_GUEST FAIL: <step>: <reason>" and exits 1.
//
// Statically linked (the initramfs has no libc); test code: small, no library.
#include <fcntl.h>       // defines: open
#include <linux/vfio.h>  // defines: VFIO_* ioctls and structs
#include <sys/ioctl.h>   // defines: ioctl
#include <sys/mman.h>    // defines: mmap, munmap
#include <unistd.h>      // defines: close, readlink, pread, pwrite, usleep

#include <cerrno>   // defines: errno
#include <cstdint>  // defines: uint32_t, uint64_t
#include <cstdio>   // defines: printf, fprintf
#include <cstdlib>  // defines: exit
#include <cstring>  // defines: strerror, strcmp
#include <fstream>  // defines: std::ifstream, std::ofstream
#include <string>   // defines: std::string

namespace {

[[noreturn]] void fail(const std::string& step, const std::string& why) {
  std::printf("LS_GUEST FAIL: %s: %s\n", step.c_str(), why.c_str());
  std::fflush(stdout);
  std::exit(1);
}

std::string errno_text() {
  return std::strerror(errno);
}

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

void write_sysfs(const std::string& path, const std::string& value) {
  int fd = ::open(path.c_str(), O_WRONLY);
  if (fd < 0) fail("write " + path, errno_text());
  // A sysfs attribute takes the whole value in one write.
  ssize_t n = ::write(fd, value.data(), value.size());
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size()))
    fail("write '" + value + "' to " + path, std::strerror(err));
}

// The name of the driver bound to the device, "" when none.
std::string current_driver(const std::string& dev) {
  char buf[256];
  ssize_t n = ::readlink((dev + "/driver").c_str(), buf, sizeof buf - 1);
  if (n < 0) return "";
  buf[n] = 0;
  const char* slash = std::strrchr(buf, '/');
  return slash ? slash + 1 : buf;
}

// Moves the device to `driver` ("" = whichever driver matches it by id).
void rebind(const std::string& addr, const std::string& driver) {
  const std::string dev = "/sys/bus/pci/devices/" + addr;
  // An empty override is written as a newline: that clears it.
  write_sysfs(dev + "/driver_override", driver.empty() ? "\n" : driver);
  if (!current_driver(dev).empty()) write_sysfs(dev + "/driver/unbind", addr);
  write_sysfs("/sys/bus/pci/drivers_probe", addr);
}

int xioctl(int fd, unsigned long req, void* arg, const char* what) {
  int r = ::ioctl(fd, req, arg);
  if (r < 0) fail(what, errno_text());
  return r;
}

// NVMe controller registers (NVMe 1.4, section 3.1) at BAR0 offsets.
constexpr uint32_t kCap = 0x00, kVs = 0x08, kCc = 0x14, kCsts = 0x1c, kAqa = 0x24, kAsq = 0x28,
                   kAcq = 0x30, kDoorbells = 0x1000;

struct Bar {
  volatile uint8_t* base = nullptr;
  uint32_t rd32(uint32_t off) const { return *reinterpret_cast<volatile uint32_t*>(base + off); }
  void wr32(uint32_t off, uint32_t v) const {
    *reinterpret_cast<volatile uint32_t*>(base + off) = v;
  }
  // 64-bit registers as two 32-bit accesses, low half first (works on any
  // controller; some reject 64-bit MMIO).
  uint64_t rd64(uint32_t off) const { return rd32(off) | (uint64_t(rd32(off + 4)) << 32); }
  void wr64(uint32_t off, uint64_t v) const {
    wr32(off, uint32_t(v));
    wr32(off + 4, uint32_t(v >> 32));
  }
};

bool wait_ready(const Bar& bar, bool ready, int timeout_ms) {
  for (int t = 0; t < timeout_ms; ++t) {
    if (((bar.rd32(kCsts) & 1) != 0) == ready) return true;
    ::usleep(1000);
  }
  return false;
}

// Enables the controller with its admin queues at IOVAs that are not mapped,
// then rings the admin submission doorbell: the controller's fetch of the
// command must fault in the IOMMU. Leaves the controller disabled.
void provoke_dma_fault(int device_fd, const Bar& bar, uint64_t cap) {
  // Bus mastering on, or the controller cannot even try to DMA.
  vfio_region_info cfg{};
  cfg.argsz = sizeof cfg;
  cfg.index = VFIO_PCI_CONFIG_REGION_INDEX;
  xioctl(device_fd, VFIO_DEVICE_GET_REGION_INFO, &cfg, "config region info");
  uint16_t cmd = 0;
  if (::pread(device_fd, &cmd, 2, cfg.offset + 4) != 2) fail("read PCI command", errno_text());
  cmd |= 0x4;
  if (::pwrite(device_fd, &cmd, 2, cfg.offset + 4) != 2) fail("write PCI command", errno_text());

  const int timeout_ms = int((cap >> 24) & 0xff) * 500;  // CAP.TO is in 500 ms units
  bar.wr32(kCc, 0);
  if (!wait_ready(bar, false, timeout_ms)) fail("dma-fault", "controller did not disable");
  bar.wr32(kAqa, (1u << 16) | 1u);  // 2-entry admin queues (sizes are 0-based)
  bar.wr64(kAsq, 0x40000000ull);    // nothing is mapped in this container
  bar.wr64(kAcq, 0x40001000ull);
  bar.wr32(kCc, (4u << 20) | (6u << 16) | 1u);  // IOCQES=16 B, IOSQES=64 B, EN
  if (!wait_ready(bar, true, timeout_ms)) fail("dma-fault", "controller did not become ready");
  bar.wr32(kDoorbells, 1);  // admin SQ tail = 1: fetch the entry at ASQ
  ::usleep(200 * 1000);
  bar.wr32(kCc, 0);
  if (!wait_ready(bar, false, timeout_ms))
    fail("dma-fault", "controller did not disable after the fault");
  std::printf(
      "LS_GUEST dma-fault: doorbell rung with unmapped admin queues; controller disabled again\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PCI_ADDRESS [--dma-fault]\n", argv[0]);
    return 2;
  }
  const std::string addr = argv[1];
  const bool dma_fault = argc > 2 && std::strcmp(argv[2], "--dma-fault") == 0;
  const std::string dev = "/sys/bus/pci/devices/" + addr;

  // 1. The device is an NVMe controller (class 01 08 02: storage, NVM, NVMe).
  const std::string cls = read_line(dev + "/class");
  if (cls != "0x010802") fail("find " + addr, "class is '" + cls + "', not NVMe 0x010802");
  const std::string group_link = dev + "/iommu_group";
  char buf[256];
  ssize_t n = ::readlink(group_link.c_str(), buf, sizeof buf - 1);
  if (n < 0) fail("iommu group of " + addr, errno_text() + " (is the IOMMU on? intel_iommu=on)");
  buf[n] = 0;
  const std::string group = std::strrchr(buf, '/') + 1;
  const std::string old_driver = current_driver(dev);
  std::printf("LS_GUEST device %s: class %s, driver %s, iommu group %s\n", addr.c_str(),
              cls.c_str(), old_driver.empty() ? "(none)" : old_driver.c_str(), group.c_str());

  // 2. Bind to vfio-pci.
  rebind(addr, "vfio-pci");
  if (current_driver(dev) != "vfio-pci")
    fail("bind vfio-pci", "driver is '" + current_driver(dev) + "'");
  std::printf("LS_GUEST bound to vfio-pci\n");

  // 3. VFIO type1: container, group, device.
  int container = ::open("/dev/vfio/vfio", O_RDWR);
  if (container < 0) fail("open /dev/vfio/vfio", errno_text());
  if (::ioctl(container, VFIO_GET_API_VERSION) != VFIO_API_VERSION)
    fail("VFIO_GET_API_VERSION", "unknown API");
  if (::ioctl(container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) != 1)
    fail("VFIO_CHECK_EXTENSION", "no type1v2");
  const std::string group_path = "/dev/vfio/" + group;
  int group_fd = ::open(group_path.c_str(), O_RDWR);
  if (group_fd < 0) fail("open " + group_path, errno_text());
  vfio_group_status status{};
  status.argsz = sizeof status;
  xioctl(group_fd, VFIO_GROUP_GET_STATUS, &status, "VFIO_GROUP_GET_STATUS");
  if (!(status.flags & VFIO_GROUP_FLAGS_VIABLE))
    fail("group " + group, "not viable (another device in it is bound to a host driver)");
  xioctl(group_fd, VFIO_GROUP_SET_CONTAINER, &container, "VFIO_GROUP_SET_CONTAINER");
  if (::ioctl(container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU) < 0)
    fail("VFIO_SET_IOMMU",
         errno_text() + " (EPERM: interrupt remapping off? intel-iommu,intremap=on)");
  int device_fd = ::ioctl(group_fd, VFIO_GROUP_GET_DEVICE_FD, addr.c_str());
  if (device_fd < 0) fail("VFIO_GROUP_GET_DEVICE_FD", errno_text());
  std::printf("LS_GUEST vfio: container, group %s, type1v2, device fd open\n", group.c_str());

  // 4. BAR0 from its region info.
  vfio_region_info region{};
  region.argsz = sizeof region;
  region.index = VFIO_PCI_BAR0_REGION_INDEX;
  xioctl(device_fd, VFIO_DEVICE_GET_REGION_INFO, &region, "BAR0 region info");
  if (!(region.flags & VFIO_REGION_INFO_FLAG_MMAP)) fail("BAR0", "region cannot be mmapped");
  void* map =
      ::mmap(nullptr, region.size, PROT_READ | PROT_WRITE, MAP_SHARED, device_fd, region.offset);
  if (map == MAP_FAILED) fail("mmap BAR0", errno_text());
  Bar bar{static_cast<volatile uint8_t*>(map)};

  // 5. CAP and VS.
  const unsigned long long cap = bar.rd64(kCap);  // ull: matches %llu
  const uint32_t vs = bar.rd32(kVs);
  const uint32_t csts = bar.rd32(kCsts);
  std::printf("LS_GUEST BAR0 size %llu\n", static_cast<unsigned long long>(region.size));
  std::printf(
      "LS_GUEST CAP 0x%016llx: MQES %llu, CQR %llu, TO %llu ms, DSTRD %llu, CSS 0x%llx, MPSMIN "
      "%llu KiB, MPSMAX %llu KiB\n",
      cap, (cap & 0xffff) + 1, (cap >> 16) & 1, ((cap >> 24) & 0xff) * 500, (cap >> 32) & 0xf,
      (cap >> 37) & 0xff, 4ull << ((cap >> 48) & 0xf), 4ull << ((cap >> 52) & 0xf));
  std::printf("LS_GUEST VS %u.%u.%u\n", vs >> 16, (vs >> 8) & 0xff, vs & 0xff);
  std::printf("LS_GUEST CSTS 0x%08x\n", csts);
  if (cap == 0 || cap == ~0ull) fail("CAP", "reads as all zeros or all ones");
  if ((vs >> 16) != 1) fail("VS", "major version is not 1");
  if (!((cap >> 37) & 1)) fail("CAP.CSS", "NVM command set not supported");

  if (dma_fault) provoke_dma_fault(device_fd, bar, cap);

  // 6. Release everything and give the controller back to its driver.
  ::munmap(map, region.size);
  ::close(device_fd);
  xioctl(group_fd, VFIO_GROUP_UNSET_CONTAINER, nullptr, "VFIO_GROUP_UNSET_CONTAINER");
  ::close(group_fd);
  ::close(container);
  rebind(addr, "");
  const std::string now = current_driver(dev);
  std::printf("LS_GUEST unbound from vfio-pci; driver now %s\n",
              now.empty() ? "(none)" : now.c_str());
  if (now != old_driver) fail("unbind", "driver is '" + now + "', was '" + old_driver + "'");
  std::printf("LS_GUEST PASS\n");
  return 0;
}
