// `layerstream nvme status|bind|unbind` and the first steps of VfioDevice::open
// on a fake machine: sysfs attributes as regular files, driver and IOMMU group
// links as symbolic links, /dev/nvmeXnY as a regular file holding a disk image
// (empty, or with a partition table or file system), /proc/mounts and
// /proc/swaps. Checks the status text, every refusal with its reason, the
// dry-run output, the sysfs writes bind and unbind make (and undo), and that
// each missing piece (IOMMU, vfio-pci, the vfio module) is named.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "io/vfio/disk_guard.h"      // defines: bind_refusals
#include "io/vfio/nvme_bind.h"       // defines: plan_bind, plan_unbind, apply_plan, format_plan
#include "io/vfio/nvme_inventory.h"  // defines: scan_nvme, format_inventory
#include "io/vfio/pci_sysfs.h"       // defines: SysFs, write_error_hint
#include "io/vfio/vfio.h"            // defines: VfioDevice
#include "tests/unit/ls_binary.h"    // defines: LS_BINARY

using namespace ls;
namespace fs = std::filesystem;

namespace {

constexpr const char* kAddr = "0000:00:04.0";
constexpr const char* kAddr2 = "0000:00:05.0";

// A machine as a tree of files. Device numbers are unlikely ones (major 259,
// minor 9000+) so the / and /boot check by st_dev never matches this host.
struct FakeMachine {
  fs::path root;

  FakeMachine() {
    static std::atomic<int> n{0};
    root = fs::temp_directory_path() /
           ("ls_nvme_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(root);
    fs::create_directories(root);
    for (const char* d : {"nvme", "vfio-pci"}) {
      file(std::string("/sys/bus/pci/drivers/") + d + "/unbind", "");
      file(std::string("/sys/bus/pci/drivers/") + d + "/bind", "");
    }
    file("/sys/bus/pci/drivers_probe", "");
    file("/proc/mounts", "sysfs /sys sysfs rw 0 0\n");
    file("/proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n");
  }
  ~FakeMachine() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  std::string str() const { return root.string(); }
  fs::path at(const std::string& abs) const { return root / abs.substr(1); }

  void file(const std::string& abs, const std::string& content) {
    fs::create_directories(at(abs).parent_path());
    std::ofstream(at(abs), std::ios::binary) << content;
  }
  std::string read(const std::string& abs) const {
    std::ifstream in(at(abs), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  void link(const std::string& abs, const std::string& target) {
    fs::create_directories(at(abs).parent_path());
    fs::remove(at(abs));
    fs::create_directory_symlink(target, at(abs));
  }
  void bind_to(const std::string& addr, const std::string& driver) {
    const std::string l = "/sys/bus/pci/devices/" + addr + "/driver";
    if (driver.empty())
      fs::remove(at(l));
    else
      link(l, "../../drivers/" + driver);
  }
  // A controller of class NVMe in IOMMU group `group` ("" for none), bound to
  // `driver`; with the nvme driver it shows up as `name` in /sys/class/nvme.
  void controller(const std::string& addr, const std::string& name, const std::string& group,
                  const std::string& driver = "nvme") {
    const std::string dev = "/sys/bus/pci/devices/" + addr;
    file(dev + "/class", "0x010802\n");
    file(dev + "/vendor", "0x1b36\n");
    file(dev + "/device", "0x0010\n");
    file(dev + "/driver_override", "(null)\n");
    bind_to(addr, driver);
    if (!group.empty()) {
      fs::create_directories(at("/sys/kernel/iommu_groups/" + group + "/devices"));
      link(dev + "/iommu_group", "../../../../kernel/iommu_groups/" + group);
      link("/sys/kernel/iommu_groups/" + group + "/devices/" + addr,
           "../../../../bus/pci/devices/" + addr);
    }
    if (driver == "nvme") {
      fs::create_directories(at(dev + "/nvme/" + name));
      file("/sys/class/nvme/" + name + "/model", "QEMU NVMe Ctrl                          \n");
      file("/sys/class/nvme/" + name + "/serial", "lsdeadbeef          \n");
      file("/sys/class/nvme/" + name + "/firmware_rev", "7.2.0   \n");
    }
  }
  // A namespace of `bytes` whose first bytes are `image` (zero-padded to 68 KiB).
  void ns(const std::string& ctrl, const std::string& name, uint64_t bytes,
          const std::string& image, int minor) {
    fs::create_directories(at("/sys/class/nvme/" + ctrl + "/" + name));
    const std::string blk = "/sys/block/" + name;
    file(blk + "/dev", "259:" + std::to_string(minor) + "\n");
    file(blk + "/size", std::to_string(bytes / 512) + "\n");
    file(blk + "/queue/logical_block_size", "512\n");
    std::string img = image;
    img.resize(std::max<size_t>(img.size(), 68 * 1024), '\0');
    file("/dev/" + name, img);
  }
  void partition(const std::string& ns_name, const std::string& part, int minor) {
    file("/sys/block/" + ns_name + "/" + part + "/partition", "1\n");
    file("/sys/block/" + ns_name + "/" + part + "/dev", "259:" + std::to_string(minor) + "\n");
  }
};

std::string gpt_image() {
  std::string img(1024, '\0');
  img[510] = '\x55';
  img[511] = '\xaa';  // the protective MBR
  std::memcpy(&img[512], "EFI PART", 8);
  return img;
}

std::string ext4_image() {
  std::string img(2048, '\0');
  img[1080] = '\x53';
  img[1081] = '\xef';
  return img;
}

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}
bool any_contains(const std::vector<std::string>& v, const std::string& needle) {
  for (const auto& s : v)
    if (contains(s, needle)) return true;
  return false;
}

// The built CLI on the fake tree: exit code and stdout + stderr.
std::pair<int, std::string> run_cli(const std::string& args) {
  const std::string cmd = std::string(LS_BINARY) + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = ::pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

}  // namespace

TEST_CASE("nvme status: controllers with model, serial, driver, group, namespaces and contents") {
  FakeMachine m;
  m.controller(kAddr, "nvme0", "7");
  m.ns("nvme0", "nvme0n1", 1ull << 30, "", 9000);  // empty: free to take
  m.controller(kAddr2, "nvme1", "8");
  m.ns("nvme1", "nvme1n1", 2ull << 30, gpt_image(), 9001);
  m.partition("nvme1n1", "nvme1n1p1", 9002);
  m.partition("nvme1n1", "nvme1n1p2", 9003);
  m.file("/proc/mounts",
         "/dev/nvme1n1p1 /boot ext4 rw 0 0\n/dev/nvme1n1p2 /mnt/my\\040data xfs rw 0 0\n");
  m.file("/sys/bus/pci/devices/0000:00:1f.0/class", "0x060100\n");  // not NVMe: not listed

  const NvmeInventory inv = scan_nvme(SysFs(m.str()));
  CHECK(inv.iommu);
  CHECK(inv.vfio_pci_loaded);
  REQUIRE(inv.controllers.size() == 2);
  const NvmePciController& c0 = inv.controllers[0];
  CHECK(c0.address == kAddr);
  CHECK(c0.name == "nvme0");
  CHECK(c0.model == "QEMU NVMe Ctrl");
  CHECK(c0.serial == "lsdeadbeef");
  CHECK(c0.driver == "nvme");
  CHECK(c0.iommu_group == "7");
  REQUIRE(c0.namespaces.size() == 1);
  CHECK(c0.namespaces[0].bytes == (1ull << 30));
  CHECK(c0.namespaces[0].signature.empty());
  CHECK(c0.namespaces[0].unchecked.empty());
  CHECK(bind_refusals(c0).empty());

  const NvmePciController& c1 = inv.controllers[1];
  REQUIRE(c1.namespaces.size() == 1);
  const NvmeNamespace& n1 = c1.namespaces[0];
  CHECK(n1.partitions == std::vector<std::string>{"nvme1n1p1", "nvme1n1p2"});
  CHECK(n1.signature == "GPT partition table");
  CHECK(n1.holds_boot);
  CHECK_FALSE(n1.holds_root);
  CHECK(any_contains(n1.uses, "nvme1n1p2 is mounted on /mnt/my data"));  // \040 decoded

  const std::string text = format_inventory(inv);
  CHECK(contains(text, "0000:00:04.0  nvme0  model \"QEMU NVMe Ctrl\"  serial lsdeadbeef"));
  CHECK(contains(text, "IOMMU group: 7 (alone in it)"));
  CHECK(contains(text, "nvme0n1: 1.00 GiB (2097152 blocks of 512 B)"));
  CHECK(contains(text, "contents: no partition table or file system found"));
  CHECK(contains(text, "contents: GPT partition table"));
  CHECK(contains(text, "in use: nvme1n1p1 is mounted on /boot"));
  CHECK(contains(text, "holds /boot"));
  CHECK(contains(text, "bind: allowed"));
  CHECK(contains(text, "bind: refused:"));
  CHECK_FALSE(contains(text, "0000:00:1f.0"));
}

TEST_CASE("nvme status: a controller away from the nvme driver, no IOMMU, no vfio-pci") {
  FakeMachine m;
  m.controller(kAddr, "nvme0", "", "vfio-pci");
  fs::remove_all(m.at("/sys/bus/pci/drivers/vfio-pci"));
  m.controller(kAddr2, "nvme1", "", "");
  const NvmeInventory inv = scan_nvme(SysFs(m.str()));
  const std::string text = format_inventory(inv);
  CHECK(contains(text, "IOMMU: none (/sys/kernel/iommu_groups is empty)"));
  CHECK(contains(text, "vfio-pci driver: not loaded (modprobe vfio-pci)"));
  CHECK(contains(text, "IOMMU group: none (no iommu_group link)"));
  CHECK(contains(text, "namespaces: not visible: the nvme driver is not bound to it"));
  CHECK(contains(text, "driver: none"));
  CHECK(contains(text, "bind: already bound to vfio-pci"));
  CHECK(contains(text, "is bound to no driver, so its namespaces cannot be checked"));
}

TEST_CASE("nvme bind: refuses a partition table, a file system, a mount, swap, a holder, /") {
  struct Case {
    const char* what;
    std::string image;
    std::string mounts, swaps;
    bool partition = false, holder = false;
    const char* reason;
  };
  const std::vector<Case> cases = {
      {"GPT", gpt_image(), "", "", false, false, "nvme0n1 holds a GPT partition table"},
      {"ext4", ext4_image(), "", "", false, false, "nvme0n1 holds an ext2/3/4 file system"},
      {"partition", "", "", "", true, false, "nvme0n1 has partitions (nvme0n1p1)"},
      {"mount", "", "/dev/nvme0n1 /data ext4 rw 0 0\n", "", false, false,
       "nvme0n1 is mounted on /data"},
      {"root", "", "/dev/nvme0n1p1 / ext4 rw 0 0\n", "", true, false,
       "nvme0n1 holds the root file system /"},
      {"swap", "", "", "/dev/nvme0n1p1 partition 1024 0 -2\n", true, false,
       "nvme0n1p1 is active swap"},
      {"holder", "", "", "", false, true, "nvme0n1 is held by dm-0"},
  };
  for (const auto& k : cases) {
    CAPTURE(k.what);
    FakeMachine m;
    m.controller(kAddr, "nvme0", "7");
    m.ns("nvme0", "nvme0n1", 1ull << 30, k.image, 9000);
    if (k.partition) m.partition("nvme0n1", "nvme0n1p1", 9001);
    if (k.holder) fs::create_directories(m.at("/sys/block/nvme0n1/holders/dm-0"));
    if (!k.mounts.empty()) m.file("/proc/mounts", k.mounts);
    if (!k.swaps.empty()) m.file("/proc/swaps", "Filename Type Size Used Priority\n" + k.swaps);
    const SysFs sys(m.str());
    auto plan = plan_bind(sys, kAddr);
    REQUIRE(plan);
    CHECK_FALSE(plan->allowed());
    CHECK(any_contains(plan->refusals, k.reason));
    // Nothing is written, whatever the caller does.
    CHECK_FALSE(apply_plan(sys, *plan));
    CHECK(m.read(std::string("/sys/bus/pci/devices/") + kAddr + "/driver_override") == "(null)\n");
    CHECK(m.read("/sys/bus/pci/drivers/nvme/unbind") == "");
    CHECK(contains(format_plan(*plan, false), "refused: the drive may hold data"));
  }
}

TEST_CASE("nvme bind: a namespace that cannot be read is not taken") {
  FakeMachine m;
  m.controller(kAddr, "nvme0", "7");
  m.ns("nvme0", "nvme0n1", 1ull << 30, "", 9000);
  fs::remove(m.at("/dev/nvme0n1"));
  auto plan = plan_bind(SysFs(m.str()), kAddr);
  REQUIRE(plan);
  CHECK(any_contains(plan->refusals,
                     "nvme0n1 could not be checked for a partition table or file system: cannot "
                     "read /dev/nvme0n1"));
}

TEST_CASE("nvme bind: an empty drive moves to vfio-pci through driver_override, unbind, probe") {
  FakeMachine m;
  m.controller(kAddr, "nvme0", "7");
  m.ns("nvme0", "nvme0n1", 1ull << 30, "GGUF", 9000);
  const SysFs sys(m.str());
  auto plan = plan_bind(sys, kAddr);
  REQUIRE(plan);
  CHECK(plan->allowed());
  REQUIRE(plan->writes.size() == 3);
  REQUIRE(apply_plan(sys, *plan));
  CHECK(m.read(std::string("/sys/bus/pci/devices/") + kAddr + "/driver_override") == "vfio-pci");
  CHECK(m.read("/sys/bus/pci/drivers/nvme/unbind") == kAddr);
  CHECK(m.read("/sys/bus/pci/drivers_probe") == kAddr);
  CHECK(m.read("/sys/bus/pci/drivers/vfio-pci/bind") == "");
}

TEST_CASE("nvme bind: --dry-run prints what it would write where and writes nothing") {
  FakeMachine m;
  m.controller(kAddr, "nvme0", "7");
  m.ns("nvme0", "nvme0n1", 1ull << 30, "", 9000);
  // Not structured bindings: clang 14 cannot capture one (CAPTURE does).
  int rc = 0;
  std::string out;
  std::tie(rc, out) = run_cli(std::string("nvme bind ") + kAddr + " --dry-run --root " + m.str());
  CAPTURE(out);
  CHECK(rc == 0);
  CHECK(contains(out, "0000:00:04.0: nvme -> vfio-pci"));
  CHECK(contains(out,
                 "would write \"vfio-pci\" to /sys/bus/pci/devices/0000:00:04.0/driver_override"));
  CHECK(contains(out, "would write \"0000:00:04.0\" to /sys/bus/pci/drivers/nvme/unbind"));
  CHECK(contains(out, "would write \"0000:00:04.0\" to /sys/bus/pci/drivers_probe"));
  CHECK(m.read(std::string("/sys/bus/pci/devices/") + kAddr + "/driver_override") == "(null)\n");
  CHECK(m.read("/sys/bus/pci/drivers_probe") == "");

  // The CLI refuses a drive with a file system, with the reason, and exits 1.
  m.ns("nvme0", "nvme0n1", 1ull << 30, ext4_image(), 9000);
  int rc2 = 0;
  std::string out2;
  std::tie(rc2, out2) = run_cli(std::string("nvme bind ") + kAddr + " --root " + m.str());
  CAPTURE(out2);
  CHECK(rc2 == 1);
  CHECK(contains(out2, "nvme0n1 holds an ext2/3/4 file system"));
  CHECK(contains(out2, "error: refusing to bind 0000:00:04.0 to vfio-pci"));
  CHECK(m.read("/sys/bus/pci/drivers_probe") == "");

  auto [rc3, out3] = run_cli("nvme status --root " + m.str());
  CHECK(rc3 == 0);
  CHECK(contains(out3, "contents: ext2/3/4 file system"));
}

TEST_CASE("nvme bind: names what is missing: IOMMU, the group link, vfio-pci, root") {
  {
    FakeMachine m;
    m.controller(kAddr, "nvme0", "");
    m.ns("nvme0", "nvme0n1", 1ull << 30, "", 9000);
    fs::remove_all(m.at("/sys/bus/pci/drivers/vfio-pci"));
    auto plan = plan_bind(SysFs(m.str()), kAddr);
    REQUIRE(plan);
    CHECK(plan->refusals.empty());
    CHECK(any_contains(plan->missing, "no IOMMU: /sys/kernel/iommu_groups is empty"));
    CHECK(any_contains(plan->missing, "the vfio-pci driver is not loaded"));
    CHECK_FALSE(apply_plan(SysFs(m.str()), *plan));
    auto [rc, out] = run_cli(std::string("nvme bind ") + kAddr + " --dry-run --root " + m.str());
    CHECK(rc == 1);
    CHECK(contains(out, "missing:"));
  }
  {
    FakeMachine m;
    m.controller(kAddr, "nvme0", "");
    m.ns("nvme0", "nvme0n1", 1ull << 30, "", 9000);
    m.controller(kAddr2, "nvme1", "3");  // groups exist, but not for kAddr
    auto plan = plan_bind(SysFs(m.str()), kAddr);
    REQUIRE(plan);
    CHECK(any_contains(
        plan->missing,
        "0000:00:04.0 has no IOMMU group (no /sys/bus/pci/devices/0000:00:04.0/iommu_group link)"));
  }
  // Without root the sysfs writes fail with EACCES; the message says so (the
  // tests may run as root, so the errno is given directly).
  CHECK(contains(write_error_hint("/sys/bus/pci/drivers_probe", EACCES),
                 "cannot write /sys/bus/pci/drivers_probe: Permission denied (changing a "
                 "device's driver needs root"));
}

TEST_CASE("nvme bind: a group shared with a device on another driver is noted") {
  FakeMachine m;
  m.controller(kAddr, "nvme0", "7");
  m.ns("nvme0", "nvme0n1", 1ull << 30, "", 9000);
  m.file("/sys/bus/pci/devices/0000:00:1f.3/class", "0x040300\n");
  m.link("/sys/bus/pci/devices/0000:00:1f.3/driver", "../../drivers/snd_hda_intel");
  m.link("/sys/kernel/iommu_groups/7/devices/0000:00:1f.3",
         "../../../../bus/pci/devices/0000:00:1f.3");
  auto plan = plan_bind(SysFs(m.str()), kAddr);
  REQUIRE(plan);
  CHECK(plan->allowed());
  CHECK(any_contains(plan->notes, "IOMMU group 7 also holds 0000:00:1f.3, bound to snd_hda_intel"));
}

TEST_CASE("nvme bind: a failed write is undone") {
  FakeMachine m;
  m.controller(kAddr, "nvme0", "7");
  m.ns("nvme0", "nvme0n1", 1ull << 30, "", 9000);
  const SysFs sys(m.str());
  auto plan = plan_bind(sys, kAddr);
  REQUIRE(plan);
  REQUIRE(plan->allowed());
  fs::remove(m.at("/sys/bus/pci/drivers/nvme/unbind"));  // the second write fails
  Status s = apply_plan(sys, *plan);
  REQUIRE_FALSE(s);
  CHECK(contains(s.error().message, "cannot write /sys/bus/pci/drivers/nvme/unbind"));
  CHECK(contains(s.error().message, "earlier writes undone"));
  CHECK(m.read(std::string("/sys/bus/pci/devices/") + kAddr + "/driver_override") == "\n");
  CHECK(m.read("/sys/bus/pci/drivers_probe") == kAddr);
}

TEST_CASE("nvme unbind: back to nvme, and nothing to do when it is there") {
  FakeMachine m;
  m.controller(kAddr, "nvme0", "7", "vfio-pci");
  const SysFs sys(m.str());
  auto plan = plan_unbind(sys, kAddr);
  REQUIRE(plan);
  CHECK(plan->allowed());
  auto [rc, out] = run_cli(std::string("nvme unbind ") + kAddr + " --dry-run --root " + m.str());
  CHECK(rc == 0);
  CHECK(contains(
      out, "would write (empty: clears it) to /sys/bus/pci/devices/0000:00:04.0/driver_override"));
  CHECK(contains(out, "would write \"0000:00:04.0\" to /sys/bus/pci/drivers/vfio-pci/unbind"));
  REQUIRE(apply_plan(sys, *plan));
  CHECK(m.read(std::string("/sys/bus/pci/devices/") + kAddr + "/driver_override") == "\n");
  CHECK(m.read("/sys/bus/pci/drivers/vfio-pci/unbind") == kAddr);
  CHECK(m.read("/sys/bus/pci/drivers_probe") == kAddr);

  m.bind_to(kAddr, "nvme");
  auto again = plan_unbind(sys, kAddr);
  REQUIRE(again);
  CHECK(again->nothing_to_do);
  fs::remove_all(m.at("/sys/bus/pci/drivers/nvme"));
  m.bind_to(kAddr, "vfio-pci");
  auto no_nvme = plan_unbind(sys, kAddr);
  REQUIRE(no_nvme);
  CHECK(any_contains(no_nvme->missing, "the nvme driver is not loaded"));
}

TEST_CASE("nvme: an address that is no NVMe controller is an error naming it") {
  FakeMachine m;
  m.file("/sys/bus/pci/devices/0000:00:1f.0/class", "0x060100\n");
  auto a = plan_bind(SysFs(m.str()), "0000:00:1f.0");
  REQUIRE_FALSE(a);
  CHECK(contains(a.error().message,
                 "PCI device 0000:00:1f.0 is not an NVMe controller (class 0x060100"));
  auto b = plan_bind(SysFs(m.str()), "0000:09:00.0");
  REQUIRE_FALSE(b);
  CHECK(contains(b.error().message, "no PCI device 0000:09:00.0"));
}

TEST_CASE("nvme status: a multipath namespace (nvme0c0n1) maps to its block device nvme0n1") {
  FakeMachine m;
  m.controller(kAddr, "nvme0", "7");
  m.ns("nvme0", "nvme0n1", 1ull << 30, "", 9000);
  fs::rename(m.at("/sys/class/nvme/nvme0/nvme0n1"), m.at("/sys/class/nvme/nvme0/nvme0c0n1"));
  auto c = scan_nvme_controller(SysFs(m.str()), kAddr);
  REQUIRE(c);
  REQUIRE(c->namespaces.size() == 1);
  CHECK(c->namespaces[0].name == "nvme0n1");
  CHECK(c->namespaces[0].bytes == (1ull << 30));
}

TEST_CASE("vfio open: each missing piece is named before any ioctl") {
  FakeMachine m;
  auto none = VfioDevice::open(kAddr, m.str());
  REQUIRE_FALSE(none);
  CHECK(contains(none.error().message, "no PCI device 0000:00:04.0"));

  m.controller(kAddr, "nvme0", "");
  auto no_iommu = VfioDevice::open(kAddr, m.str());
  REQUIRE_FALSE(no_iommu);
  CHECK(contains(no_iommu.error().message, "no IOMMU: /sys/kernel/iommu_groups is empty"));

  m.controller(kAddr, "nvme0", "7");
  auto on_nvme = VfioDevice::open(kAddr, m.str());
  REQUIRE_FALSE(on_nvme);
  CHECK(contains(on_nvme.error().message,
                 "device 0000:00:04.0 is bound to nvme, not vfio-pci: run `layerstream nvme bind "
                 "0000:00:04.0`"));

  m.bind_to(kAddr, "vfio-pci");
  auto no_module = VfioDevice::open(kAddr, m.str());
  REQUIRE_FALSE(no_module);
  CHECK(no_module.error().message == "no /dev/vfio/vfio: load the vfio module (modprobe vfio-pci)");

  // A regular file is no VFIO container: the API check catches it, and the
  // partial open is released (no fd leak: the next open gets the same fd).
  m.file("/dev/vfio/vfio", "");
  auto not_vfio = VfioDevice::open(kAddr, m.str());
  REQUIRE_FALSE(not_vfio);
  CHECK(contains(not_vfio.error().message,
                 "/dev/vfio/vfio is not a VFIO container (VFIO_GET_API_VERSION"));
  const int fd_before = ::dup(0);
  ::close(fd_before);
  auto again = VfioDevice::open(kAddr, m.str());
  REQUIRE_FALSE(again);
  const int fd_after = ::dup(0);
  ::close(fd_after);
  CHECK(fd_before == fd_after);
}

TEST_CASE("nvme bind: a root mounted as /dev/root is found by its device number") {
  FakeMachine m;
  m.controller(kAddr, "nvme0", "7");
  m.ns("nvme0", "nvme0n1", 1ull << 30, "", 9000);
  m.partition("nvme0n1", "nvme0n1p2", 9002);
  m.file("/proc/mounts", "/dev/root / ext4 rw 0 0\n");  // names no device
  // The fake root directory lives on some file system: say nvme0n1p2 is it.
  struct stat st {};
  REQUIRE(::stat(m.str().c_str(), &st) == 0);
  m.file("/sys/block/nvme0n1/nvme0n1p2/dev",
         std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev)) + "\n");
  auto plan = plan_bind(SysFs(m.str()), kAddr);
  REQUIRE(plan);
  CHECK(any_contains(plan->refusals, "nvme0n1 holds the root file system /"));
}

TEST_CASE("nvme bind: without root, the plan names the sysfs files it cannot write") {
  FakeMachine m;
  m.controller(kAddr, "nvme0", "7");
  m.ns("nvme0", "nvme0n1", 1ull << 30, "", 9000);
  // The fake tree's files are 0644 and ours; as another user they are not
  // writable, as sysfs attributes are not without root. Root drops to nobody
  // in a child to see it.
  auto check = [&] {
    auto plan = plan_bind(SysFs(m.str()), kAddr);
    return plan && plan->refusals.empty() &&
           any_contains(plan->missing,
                        "cannot write /sys/bus/pci/devices/0000:00:04.0/driver_override: "
                        "Permission denied (changing a device's driver needs root") &&
           !apply_plan(SysFs(m.str()), *plan);
  };
  if (::geteuid() != 0) {
    CHECK(check());
    return;
  }
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    ::_exit(check() ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(m.read("/sys/bus/pci/drivers_probe") == "");
}
