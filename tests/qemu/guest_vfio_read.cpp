// ls_qemu_guest_vfio: the userspace NVMe driver (io/nvme/) over VFIO
// (io/vfio/) against QEMU's emulated NVMe controller, inside the guest that
// tests/qemu/run.sh boots:
//   0. `nvme status` lists both controllers with their namespaces;
//   1. `bind` refuses the controller whose namespace has a partition table
//      (LS_NVME_PARTITIONED) and the one whose namespace holds a file system
//      on the whole disk (LS_NVME_FS), then moves LS_NVME to vfio-pci;
//   2. the controller comes up through VFIO; the model at LS_NVME_LBA passes
//      the raw-GGUF check against LS_MODEL (io/raw_gguf.h);
//   3. every layer extent of the model is read through the driver and
//      compared byte for byte with the file, on I/O queues of depth 1, 8 and
//      64, with transfers capped at 1 block, 8 blocks, 64 KiB and MDTS;
//   4. faults: a read past the namespace is refused naming its LBA and size;
//   5. decode (CPU backend, every layer on the storage tier) through the
//      block source `--reader vfio` gives the same greedy tokens as through
//      io_uring read of the file (buffered: the initramfs has no O_DIRECT);
//   6. shutdown leaves the controller disabled, checked by reading CSTS from
//      a fresh VFIO open; the controller goes back to the nvme driver. The
//      controller's PCI resets are off from the bind to the unbind
//      (reset_method): QEMU's NVMe has FLR, and vfio-pci would otherwise
//      reset it on every open and close, so that a fresh open read a disabled
//      controller whatever the driver left (guest_vfio_faults.cpp shows both).
// Prints "LS_GUEST PASS" or "LS_GUEST FAIL: step: why" (exit 1).
//
//   ls_qemu_guest_vfio PCI_ADDRESS     (env: LS_NVME_LBA, LS_NVME_PARTITIONED, LS_NVME_FS,
//                                       LS_MODEL)
#include <algorithm>
#include <cstdio>
#include <optional>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "actors/engine.h"
#include "io/gguf.h"
#include "io/nvme/controller.h"
#include "io/nvme/spec.h"
#include "io/raw_gguf.h"
#include "io/vfio/nvme_bind.h"
#include "io/vfio/nvme_inventory.h"
#include "io/vfio/pci_sysfs.h"
#include "io/vfio/vfio.h"
#include "model/model.h"

using namespace ls;

namespace {

[[noreturn]] void fail(const std::string& step, const std::string& why) {
  std::printf("LS_GUEST FAIL: %s: %s\n", step.c_str(), why.c_str());
  std::fflush(stdout);
  std::exit(1);
}

template <typename T>
T must(Expected<T> e, const char* step) {
  if (!e) fail(step, e.error().message);
  return std::move(*e);
}

void must(const Status& s, const char* step) {
  if (!s.ok()) fail(step, s.error().message);
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  if (!v) fail("environment", std::string(name) + " is not set");
  return v;
}

// One controller session: VFIO open, bring-up with a given queue depth and
// transfer cap, then every layer extent read and compared.
uint64_t read_every_layer(const std::string& addr, uint64_t lba, const GgufFile& file,
                          const LayerMap& map, uint32_t depth, size_t max_transfer,
                          bool check_model) {
  auto dev = must(VfioDevice::open(addr), "vfio open");
  NvmeControllerOptions o;
  o.io_queue_depth = depth + 1;  // entries: a queue keeps one free, so depth + 1 holds depth
  o.max_transfer_cap = max_transfer;
  auto ctl = must(NvmeController::open(dev->regs(), dev->dma(), o), "controller bring-up");
  const NvmeControllerInfo& info = ctl->info();
  const uint32_t bs = info.block_size;
  // The driver's own cap applies only when MDTS is 0; cap per command here.
  const uint64_t per_cmd =
      std::min<uint64_t>(info.max_transfer, std::max<size_t>(max_transfer, bs));
  const uint64_t per_cmd_blocks = std::max<uint64_t>(1, per_cmd / bs);
  uint64_t largest = 0;
  for (const LayerExtent& e : map.layers)
    for (const ByteRange& r : e.ranges) largest = std::max(largest, r.bytes);
  auto buf = must(dev->dma().alloc((largest / bs + 2) * bs + 4096), "dma alloc");
  auto read_at = [&](uint64_t off, uint64_t bytes, uint8_t* dst) -> Status {
    const uint64_t first = off / bs, last = (off + bytes + bs - 1) / bs;
    for (uint64_t b = first; b < last; b += per_cmd_blocks) {
      const uint64_t n = std::min(per_cmd_blocks, last - b);
      LS_TRY(ctl->read(lba + b, n, buf.iova + (b - first) * bs));
    }
    std::memcpy(dst, static_cast<uint8_t*>(buf.host) + (off - first * bs), bytes);
    return ok();
  };
  if (check_model) {
    const std::string where =
        "namespace " + std::to_string(info.nsid) + " of " + addr + " at LBA " + std::to_string(lba);
    must(verify_raw_gguf(file, (info.nsze - lba) * bs, read_at, where), "model check");
    std::printf("LS_GUEST model check: %s holds %s (%s, %s, %u-byte blocks, MDTS %u)\n",
                where.c_str(), file.path().c_str(), info.model.c_str(), info.serial.c_str(), bs,
                info.mdts);
  }
  std::vector<uint8_t> got;
  uint64_t bytes = 0;
  for (const LayerExtent& e : map.layers)
    for (const ByteRange& r : e.ranges) {
      got.resize(r.bytes);
      must(read_at(r.offset, r.bytes, got.data()), "layer read");
      if (std::memcmp(got.data(), file.base() + r.offset, r.bytes) != 0)
        fail("layer compare", "layer " + std::to_string(e.layer) + " at file offset " +
                                  std::to_string(r.offset) + " differs from the file");
      bytes += r.bytes;
    }
  // A read past the namespace: refused before it is submitted.
  const Status past = ctl->read(info.nsze, 1, buf.iova);
  if (past.ok()) fail("fault: read past the namespace", "it was accepted");
  if (check_model) std::printf("LS_GUEST fault: %s\n", past.error().message.c_str());
  dev->dma().free(buf);
  must(ctl->shutdown(), "shutdown");
  return bytes;
}

// Greedy ids of a 24-step decode with every layer read through `reader`.
std::vector<int32_t> decode_ids(const std::string& model, const std::string& reader,
                                const std::string& addr, uint64_t lba) {
  EngineOptions o;
  o.model = model;
  o.backend = "cpu";
  o.tiers = "C";
  o.n_ctx = 64;
  o.print_plan = false;
  o.watchdog_s = 0;
  o.source.kind = reader;
  o.source.nvme = addr;
  o.source.nvme_lba = lba;
  auto e = must(Engine::open(o), ("engine, --reader " + reader).c_str());
  const int V = static_cast<int>(e->model().config().n_vocab);
  std::vector<int32_t> ids;
  const std::vector<int32_t> prompt = {1, 17, 42, 99, 7};
  must(e->pipeline().run_request(
           prompt,
           [&](int64_t, const float* l, int32_t rows) -> std::optional<int32_t> {
             const float* last = l + static_cast<size_t>(rows - 1) * V;
             const int32_t t = static_cast<int32_t>(std::max_element(last, last + V) - last);
             ids.push_back(t);
             if (ids.size() == 24) return std::nullopt;
             return t;
           }),
       ("decode, --reader " + reader).c_str());
  must(e->finish(), "engine finish");
  return ids;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) fail("usage", "ls_qemu_guest_vfio PCI_ADDRESS");
  const std::string addr = argv[1];
  const uint64_t lba = std::strtoull(env("LS_NVME_LBA").c_str(), nullptr, 10);
  const std::string partitioned = env("LS_NVME_PARTITIONED");
  const std::string with_fs = env("LS_NVME_FS");
  const SysFs fs("/");

  // 0. status: both controllers, on the nvme driver, with their namespaces.
  {
    const NvmeInventory inv = scan_nvme(fs);
    const std::string text = format_inventory(inv);
    std::printf("LS_GUEST nvme status:\n");
    for (size_t at = 0; at < text.size();) {  // run.sh shows LS_GUEST lines only
      const size_t nl = std::min(text.find('\n', at), text.size());
      std::printf("LS_GUEST   %s\n", text.substr(at, nl - at).c_str());
      at = nl + 1;
    }
    if (inv.controllers.size() != 3 || text.find(addr) == std::string::npos ||
        text.find(partitioned) == std::string::npos || text.find(with_fs) == std::string::npos)
      fail("nvme status",
           "expected the three controllers " + addr + ", " + partitioned + " and " + with_fs);
  }

  // 1. bind: the partitioned disk is refused, ours is moved.
  DriverPlan refused = must(plan_bind(fs, partitioned), "plan bind (partitioned)");
  if (refused.allowed())
    fail("bind refusal", partitioned + " has a partition table but was allowed");
  for (const std::string& why : refused.refusals)
    std::printf("LS_GUEST bind %s refused: %s\n", partitioned.c_str(), why.c_str());
  // ...and so is a namespace that holds a file system on the whole disk.
  DriverPlan refused_fs = must(plan_bind(fs, with_fs), "plan bind (file system)");
  bool names_fs = false;
  for (const std::string& why : refused_fs.refusals) {
    std::printf("LS_GUEST bind %s refused: %s\n", with_fs.c_str(), why.c_str());
    names_fs |= why.find("file system") != std::string::npos;
  }
  if (refused_fs.allowed() || !names_fs)
    fail("bind refusal", with_fs + " holds an ext4 file system but was not refused for it");
  DriverPlan bind = must(plan_bind(fs, addr), "plan bind");
  if (!bind.allowed()) fail("bind", format_plan(bind, true));
  must(apply_plan(fs, bind), "bind");
  const std::string reset_method = "/sys/bus/pci/devices/" + addr + "/reset_method";
  if (fs.exists(reset_method)) must(fs.write(reset_method, "\n"), "PCI resets off");

  // 2-4. every layer, at several queue depths and transfer sizes.
  auto model = must(open_model(env("LS_MODEL")), "open model");
  const GgufFile& file = *model->file;
  const LayerMap& map = model->map;
  struct Setting {
    uint32_t depth;
    size_t max_transfer;
  };
  const Setting settings[] = {{64, 1u << 30}, {1, 512}, {8, 4096}, {64, 64 << 10}, {8, 1u << 30}};
  bool first = true;
  for (const Setting& s : settings) {
    const uint64_t bytes = read_every_layer(addr, lba, file, map, s.depth, s.max_transfer, first);
    std::printf(
        "LS_GUEST queue depth %u, transfers up to %zu bytes: %zu layers, %llu bytes, "
        "all equal to the file\n",
        s.depth, s.max_transfer, map.layers.size(), static_cast<unsigned long long>(bytes));
    first = false;
  }

  // 5. decode through --reader vfio = through the file with io_uring (the
  // default reader; buffered here, since the initramfs has no O_DIRECT).
  {
    const std::vector<int32_t> a = decode_ids(env("LS_MODEL"), "vfio", addr, lba);
    const std::vector<int32_t> b = decode_ids(env("LS_MODEL"), "uring", addr, lba);
    std::string s;
    for (int32_t t : a) s += " " + std::to_string(t);
    if (a != b) fail("decode", "--reader vfio gave different tokens from --reader uring:" + s);
    std::printf(
        "LS_GUEST decode, every layer from storage: --reader vfio = --reader uring, "
        "%zu greedy ids:%s\n",
        a.size(), s.c_str());
  }

  // 6. the controller was left disabled: CSTS from a fresh open.
  {
    auto dev = must(VfioDevice::open(addr), "vfio reopen");
    const uint32_t cc = dev->regs().read32(nvme::reg::kCc),
                   csts = dev->regs().read32(nvme::reg::kCsts);
    std::printf("LS_GUEST after shutdown: CC 0x%08x, CSTS 0x%08x\n", cc, csts);
    if ((cc & 1) || (csts & 1)) fail("left disabled", "CC.EN or CSTS.RDY is set after shutdown");
  }
  if (fs.exists(reset_method)) must(fs.write(reset_method, "default"), "PCI resets back on");
  DriverPlan unbind = must(plan_unbind(fs, addr), "plan unbind");
  must(apply_plan(fs, unbind), "unbind");
  std::printf("LS_GUEST PASS\n");
  return 0;
}
