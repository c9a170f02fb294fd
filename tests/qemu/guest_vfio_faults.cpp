// ls_qemu_guest_faults: each fault of the userspace NVMe driver (io/nvme/,
// io/vfio/) made to happen against QEMU's emulated NVMe controller, through
// the driver's real code paths, inside the guest that tests/qemu/run.sh boots
// with --slow-nvme --cli (CTest qemu_vfio_faults):
//   0. both controllers go to vfio-pci with their PCI resets turned off
//      (reset_method), so neither a VFIO open nor a close resets the function:
//      a fresh open then reads what the driver left behind, not what a reset
//      made. Control: a controller left enabled on purpose does read CC.EN=1
//      from a fresh open, so the check below can fail;
//   1. completion with an error status: Reads built by the read-only factory,
//      sent past the range check (NvmeControllerFaults::read_unchecked) past
//      the namespace end and to namespaces that do not exist; QEMU answers
//      LBA Out of Range / Invalid Namespace, and the message names the LBA and
//      decodes SCT and SC; the controller still serves a good read after;
//   2. controller fatal status: the bring-up writes a misaligned ASQ, QEMU
//      refuses the enable with CSTS.CFS=1, open() reports it and disables;
//   3. command timeout: on LS_NVME_SLOW (a copy of the disk behind QEMU's
//      block throttling, so a second large read waits ~2 s in QEMU) a read
//      with a 100 ms timeout times out; the controller must be disabled when
//      read() returns (CC.EN=0, CSTS.RDY=0 read at once), and the buffer the
//      command targets must see no write after that (poisoned, watched 2.5 s);
//   4. Ctrl-C: the real CLI, `layerstream decode --reader vfio` (LS_CLI), is
//      sent SIGINT, then in a second run SIGTERM, while it decodes; it must
//      exit 128 + the signal saying "interrupted (Ctrl-C)" or "terminated
//      (SIGTERM)".
// Each case ends with CC.EN=0, CSTS.RDY=0 read from a fresh VFIO open, and
// (in process) every DMA mapping released; run.sh fails the run on any DMAR
// fault. A controller fatal status *during operation* is not provoked: QEMU
// 7.2 sets it only when fetching a submission entry fails, which takes an
// IOMMU fault (the qemu_dma_fault_detected test's ground), never a clean run.
// Prints "LS_GUEST PASS" or "LS_GUEST FAIL: step: why" (exit 1).
//
//   ls_qemu_guest_faults PCI_ADDRESS   (env: LS_NVME_LBA, LS_NVME_SLOW, LS_MODEL, LS_CLI)
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "io/gguf.h"
#include "io/nvme/controller.h"
#include "io/nvme/spec.h"
#include "io/vfio/nvme_bind.h"
#include "io/vfio/pci_sysfs.h"
#include "io/vfio/vfio.h"

namespace ls {

// The test-only door into NvmeController (declared in io/nvme/controller.h,
// defined only here). Every read it sends is still NvmeCommand::read's.
struct NvmeControllerFaults {
  static Expected<std::unique_ptr<NvmeController>> open_misaligned_asq(
      NvmeRegs& regs, DmaMemory& dma, const NvmeControllerOptions& o) {
    NvmeController::TestFaults f;
    f.misaligned_asq = true;
    return NvmeController::open_with(regs, dma, o, f);
  }
  // read() on namespace `nsid` without the namespace bounds check.
  static Status read_unchecked(NvmeController& c, uint32_t nsid, uint64_t lba, uint64_t blocks,
                               uint64_t iova) {
    return c.read_on(nsid, lba, blocks, iova, 0, false);
  }
  static void set_command_timeout(NvmeController& c, std::chrono::milliseconds t) {
    c.opts_.command_timeout = t;
  }
  // The control case: drop the controller without its shutdown (it stays
  // enabled, idle: no command outstanding, so nothing reaches the memory
  // its queues leave behind).
  static void leave_enabled(std::unique_ptr<NvmeController> c) { c->down_ = true; }
};

}  // namespace ls

using namespace ls;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void fail(const std::string& step, const std::string& why) {
  std::printf("LS_GUEST FAIL: %s: %s\n", step.c_str(), why.c_str());
  std::fflush(stdout);
  std::exit(1);
}

template <typename T>
T must(Expected<T> e, const std::string& step) {
  if (!e) fail(step, e.error().message);
  return std::move(*e);
}

void must(const Status& s, const std::string& step) {
  if (!s.ok()) fail(step, s.error().message);
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  if (!v) fail("environment", std::string(name) + " is not set");
  return v;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

void expect_in(const std::string& step, const std::string& msg,
               std::initializer_list<std::string> parts) {
  for (const std::string& p : parts)
    if (!contains(msg, p)) fail(step, "the message lacks \"" + p + "\": " + msg);
}

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Regs {
  uint32_t cc, csts;
};

Regs regs_of(NvmeRegs& r) {
  return {r.read32(nvme::reg::kCc), r.read32(nvme::reg::kCsts)};
}

std::string describe(Regs r) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "CC 0x%08x, CSTS 0x%08x (EN %u, RDY %u, CFS %u)", r.cc, r.csts,
                r.cc & nvme::cc::kEn, r.csts & nvme::csts::kRdy, (r.csts & nvme::csts::kCfs) >> 1);
  return buf;
}

// The end of every case: CC and CSTS from a fresh VFIO open, which also
// proves the case's process or device object gave the group back (VFIO lets
// one container hold it at a time).
Regs fresh_open(const std::string& addr, const std::string& step, bool want_disabled = true) {
  auto dev = must(VfioDevice::open(addr), step + ": fresh VFIO open");
  const Regs r = regs_of(dev->regs());
  std::printf("LS_GUEST %s: fresh open of %s: %s\n", step.c_str(), addr.c_str(),
              describe(r).c_str());
  const bool disabled = !(r.cc & nvme::cc::kEn) && !(r.csts & nvme::csts::kRdy);
  if (want_disabled && !disabled) fail(step, "the controller was left enabled: " + describe(r));
  if (!want_disabled && disabled)
    fail(step, "control: a controller left enabled reads as disabled from a fresh open (" +
                   describe(r) + "): the check proves nothing");
  return r;
}

void check_released(VfioDevice& dev, const std::string& step) {
  if (const size_t n = dev.dma().mappings(); n != 0)
    fail(step, std::to_string(n) + " DMA mappings still alive after the error path");
}

// 0. Resets off, so that the fresh-open check sees the driver's work.
void resets_off(const SysFs& fs, const std::string& addr) {
  const std::string attr = "/sys/bus/pci/devices/" + addr + "/reset_method";
  const std::string before = fs.read_or(attr, "(no reset_method attribute)");
  if (fs.exists(attr)) must(fs.write(attr, "\n"), "reset_method off " + addr);
  std::printf("LS_GUEST %s: reset methods \"%s\" turned off for the test (now \"%s\")\n",
              addr.c_str(), before.c_str(), fs.read_or(attr, "").c_str());
}

void resets_default(const SysFs& fs, const std::string& addr) {
  const std::string attr = "/sys/bus/pci/devices/" + addr + "/reset_method";
  if (fs.exists(attr)) must(fs.write(attr, "default"), "reset_method default " + addr);
}

// A controller left enabled on purpose, then a fresh open. With the resets
// at their default (QEMU's NVMe offers FLR), vfio-pci resets the function on
// close and open, and the fresh open reads a disabled controller whatever the
// driver did: shown, not required. With them off it must read EN=1.
void control_left_enabled(const std::string& addr, bool resets_on) {
  const std::string step = resets_on ? "control, resets on" : "control, resets off";
  {
    auto dev = must(VfioDevice::open(addr), step + ": vfio open");
    auto ctl = must(NvmeController::open(dev->regs(), dev->dma()), step + ": bring-up");
    NvmeControllerFaults::leave_enabled(std::move(ctl));
  }
  if (resets_on) {
    auto dev = must(VfioDevice::open(addr), step + ": fresh VFIO open");
    std::printf("LS_GUEST %s: a controller left enabled reads %s from a fresh open\n", step.c_str(),
                describe(regs_of(dev->regs())).c_str());
  } else {
    fresh_open(addr, step, false);
  }
}

// 1. Completion with an error status.
void error_status(const std::string& addr) {
  const std::string step = "error status";
  const auto t0 = Clock::now();
  {
    auto dev = must(VfioDevice::open(addr), step + ": vfio open");
    auto ctl = must(NvmeController::open(dev->regs(), dev->dma()), step + ": bring-up");
    const NvmeControllerInfo& info = ctl->info();
    auto buf = must(dev->dma().alloc(64 << 10), step + ": dma alloc");
    struct Case {
      const char* what;
      uint32_t nsid;
      uint64_t lba, blocks;
      std::vector<std::string> expect;
    };
    const std::string end = std::to_string(info.nsze), last = std::to_string(info.nsze - 1);
    const Case cases[] = {
        {"one block past the namespace end",
         info.nsid,
         info.nsze,
         1,
         {"at LBA " + end + " failed", "LBA out of range", "SCT 0 generic", "SC 0x80",
          "namespace 1, I/O queue 1"}},
        {"a read across the namespace end",
         info.nsid,
         info.nsze - 1,
         8,
         {"read of 8 blocks at LBA " + last + " failed", "LBA out of range", "SC 0x80"}},
        {"a namespace id above any the controller can have",
         4096,
         0,
         1,
         {"at LBA 0 failed", "invalid namespace or format", "SCT 0 generic", "SC 0x0b",
          "namespace 4096"}},
        {"namespace 2 (the controller has 1)", 2, 0, 1, {"at LBA 0 failed", "namespace 2,"}},
    };
    for (const Case& c : cases) {
      const Status st =
          NvmeControllerFaults::read_unchecked(*ctl, c.nsid, c.lba, c.blocks, buf.iova);
      if (st.ok()) fail(step, std::string(c.what) + ": the controller accepted it");
      for (const std::string& p : c.expect)
        if (!contains(st.error().message, p))
          fail(step + ", " + c.what, "the message lacks \"" + p + "\": " + st.error().message);
      std::printf("LS_GUEST %s, %s: %s\n", step.c_str(), c.what, st.error().message.c_str());
    }
    if (ctl->failed()) fail(step, "an error status marked the controller failed");
    // The same controller still reads: an error status is the command's, not the controller's.
    must(ctl->read(0, 8, buf.iova), step + ": a good read after the errors");
    std::printf("LS_GUEST %s: a good read after them succeeds; %s\n", step.c_str(),
                describe(regs_of(dev->regs())).c_str());
    dev->dma().free(buf);
    must(ctl->shutdown(), step + ": shutdown");
    ctl.reset();
    check_released(*dev, step);
  }
  fresh_open(addr, step);
  std::printf("LS_GUEST %s: %.1f s\n", step.c_str(), since(t0));
}

// 2. Controller fatal status at enable.
void fatal_status(const std::string& addr) {
  const std::string step = "controller fatal status";
  const auto t0 = Clock::now();
  {
    auto dev = must(VfioDevice::open(addr), step + ": vfio open");
    auto ctl = NvmeControllerFaults::open_misaligned_asq(dev->regs(), dev->dma(), {});
    if (ctl) fail(step, "the controller enabled with a misaligned ASQ");
    const std::string& msg = ctl.error().message;
    expect_in(step, msg, {"enable: controller fatal status (CSTS.CFS=1)", "refused CC 0x"});
    std::printf("LS_GUEST %s: %s\n", step.c_str(), msg.c_str());
    std::printf("LS_GUEST %s: after open() returned: %s\n", step.c_str(),
                describe(regs_of(dev->regs())).c_str());
    check_released(*dev, step);
  }
  fresh_open(addr, step);
  std::printf("LS_GUEST %s: %.1f s\n", step.c_str(), since(t0));
}

// 3. Command timeout, on the throttled controller.
void timeout(const std::string& addr, uint64_t lba, const GgufFile& file) {
  const std::string step = "command timeout";
  const auto t0 = Clock::now();
  {
    auto dev = must(VfioDevice::open(addr), step + ": vfio open");
    auto ctl = must(NvmeController::open(dev->regs(), dev->dma()), step + ": bring-up");
    const NvmeControllerInfo& info = ctl->info();
    const uint64_t blocks = info.max_transfer / info.block_size;  // one command of MDTS
    const size_t bytes = blocks * info.block_size;
    if (file.file_size() < 2 * bytes) fail(step, "the model is smaller than two reads of MDTS");
    auto buf = must(dev->dma().alloc(bytes), step + ": dma alloc");
    uint8_t* host = static_cast<uint8_t*>(buf.host);
    // The first read takes QEMU's throttling burst; the second must wait in QEMU.
    auto t1 = Clock::now();
    must(ctl->read(lba, blocks, buf.iova), step + ": first read");
    if (std::memcmp(host, file.base(), bytes) != 0) fail(step, "the first read differs");
    std::printf("LS_GUEST %s: first read of %llu blocks (MDTS) in %.3f s\n", step.c_str(),
                static_cast<unsigned long long>(blocks), since(t1));
    std::memset(host, 0xA5, bytes);
    NvmeControllerFaults::set_command_timeout(*ctl, std::chrono::milliseconds(100));
    t1 = Clock::now();
    const Status st = ctl->read(lba + blocks, blocks, buf.iova);
    const double took = since(t1);
    // Straight away, before anything is freed: the controller must be off.
    const Regs r = regs_of(dev->regs());
    if (st.ok()) fail(step, "the second read completed within 100 ms despite the throttle");
    expect_in(
        step, st.error().message,
        {"read of " + std::to_string(blocks) + " blocks at LBA " + std::to_string(lba + blocks),
         "on I/O queue 1", "timed out after 100 ms", "the controller was disabled"});
    std::printf("LS_GUEST %s: %s (read() returned after %.3f s)\n", step.c_str(),
                st.error().message.c_str(), took);
    std::printf("LS_GUEST %s: when read() returned: %s\n", step.c_str(), describe(r).c_str());
    // Checked after the buffer watch below, so a driver that got this wrong
    // also shows what it costs: the late write.
    const bool enabled = (r.cc & nvme::cc::kEn) || (r.csts & nvme::csts::kRdy);
    // Was the command still in flight? QEMU drains it in the reset (then its
    // data is here) or cancels it; either way nothing may come after.
    size_t landed = 0;
    for (size_t i = 0; i < bytes; ++i) landed += host[i] != 0xA5;
    const bool data = std::memcmp(host, file.base() + bytes, bytes) == 0;
    std::printf(
        "LS_GUEST %s: the timed-out command's buffer: %s\n", step.c_str(),
        data ? "its data landed during the reset (it was in flight), before read() returned"
             : (landed ? "partly written when read() returned" : "untouched when read() returned"));
    std::memset(host, 0xA5, bytes);
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    landed = 0;
    for (size_t i = 0; i < bytes; ++i) landed += host[i] != 0xA5;
    if (landed)
      std::printf("LS_GUEST %s: %zu bytes written into the buffer after read() returned\n",
                  step.c_str(), landed);
    if (enabled) fail(step, "read() returned with the controller still enabled: " + describe(r));
    if (landed) fail(step, "the device wrote into the buffer after read() returned");
    std::printf("LS_GUEST %s: no write into the buffer in the 2.5 s after read() returned\n",
                step.c_str());
    if (ctl->read(lba, 1, buf.iova).ok()) fail(step, "a failed controller accepted another read");
    dev->dma().free(buf);
    (void)ctl->shutdown();
    ctl.reset();
    check_released(*dev, step);
  }
  fresh_open(addr, step);
  std::printf("LS_GUEST %s: %.1f s\n", step.c_str(), since(t0));
}

// 4. The real CLI, interrupted mid-decode.
void interrupt_cli(const std::string& cli, const std::string& addr, uint64_t lba,
                   const std::string& model, int sig) {
  const std::string step = sig == SIGINT ? "SIGINT" : "SIGTERM";
  const auto t0 = Clock::now();
  const std::string prompt = "Once upon a time";
  const std::vector<std::string> args = {
      cli,        "decode", "--backend", "cpu", "-t",         "1",
      "--reader", "vfio",   "--nvme",    addr,  "--nvme-lba", std::to_string(lba),
      "-m",       model,    "--tiers",   "C",   "-c",         "2048",
      "-n",       "2000",   "--temp",    "0",   "--watchdog", "0",
      "-p",       prompt};
  std::string line;
  for (const std::string& a : args) line += (line.empty() ? "" : " ") + a;
  std::printf("LS_GUEST %s: %s\n", step.c_str(), line.c_str());
  std::fflush(stdout);
  int out[2];
  if (::pipe(out) != 0) fail(step, "pipe failed");
  const std::string err_path = "/tmp/cli-" + step + ".err";
  const pid_t pid = ::fork();
  if (pid < 0) fail(step, "fork failed");
  if (pid == 0) {
    ::dup2(out[1], 1);
    const int e = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (e >= 0) ::dup2(e, 2);
    ::close(out[0]);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(cli.c_str(), argv.data());
    std::_Exit(127);
  }
  ::close(out[1]);
  // Wait until it is decoding: the prompt echoed and generated text after it.
  std::string text;
  char chunk[256];
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  while (text.size() < prompt.size() + 16 && Clock::now() < deadline) {
    const ssize_t n = ::read(out[0], chunk, sizeof chunk);
    if (n <= 0) break;
    text.append(chunk, static_cast<size_t>(n));
  }
  const double started = since(t0);
  if (text.size() < prompt.size() + 16) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    fail(step, "the decode produced no text to interrupt (" + std::to_string(text.size()) +
                   " bytes of output)");
  }
  ::kill(pid, sig);
  const auto t_sig = Clock::now();
  while (::read(out[0], chunk, sizeof chunk) > 0) {
  }
  ::close(out[0]);
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  const double stopped = since(t_sig);
  std::string err;
  if (std::FILE* f = std::fopen(err_path.c_str(), "r")) {
    while (std::fgets(chunk, sizeof chunk, f)) err += chunk;
    std::fclose(f);
  }
  for (size_t at = 0; at < err.size();) {  // run.sh shows LS_GUEST lines only
    const size_t nl = std::min(err.find('\n', at), err.size());
    if (nl > at)
      std::printf("LS_GUEST %s:   stderr: %s\n", step.c_str(), err.substr(at, nl - at).c_str());
    at = nl + 1;
  }
  if (WIFSIGNALED(wstatus))
    fail(step, "layerstream died of signal " + std::to_string(WTERMSIG(wstatus)) +
                   " instead of stopping cleanly");
  const int code = WEXITSTATUS(wstatus);
  if (code != 128 + sig)
    fail(step, "layerstream exited " + std::to_string(code) + " after the signal, not " +
                   std::to_string(128 + sig));
  const char* said = sig == SIGINT ? "interrupted (Ctrl-C)" : "terminated (SIGTERM)";
  if (!contains(err, said)) fail(step, std::string("no \"") + said + "\" message on stderr");
  std::printf(
      "LS_GUEST %s: sent after %.1f s (%zu bytes of text out); layerstream exited %d "
      "%.2f s later\n",
      step.c_str(), started, text.size(), code, stopped);
  fresh_open(addr, step);
  std::printf("LS_GUEST %s: %.1f s\n", step.c_str(), since(t0));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) fail("usage", "ls_qemu_guest_faults PCI_ADDRESS");
  const std::string addr = argv[1];
  const std::string slow = env("LS_NVME_SLOW");
  const uint64_t lba = std::strtoull(env("LS_NVME_LBA").c_str(), nullptr, 10);
  const std::string model = env("LS_MODEL"), cli = env("LS_CLI");
  const SysFs fs("/");
  auto file = must(GgufFile::open(model), "open model");

  for (const std::string& a : {addr, slow}) {
    DriverPlan bind = must(plan_bind(fs, a), "plan bind " + a);
    if (!bind.allowed()) fail("bind", format_plan(bind, true));
    must(apply_plan(fs, bind), "bind " + a);
  }
  control_left_enabled(addr, true);
  for (const std::string& a : {addr, slow}) resets_off(fs, a);
  control_left_enabled(addr, false);
  error_status(addr);
  fatal_status(addr);
  timeout(slow, lba, *file);
  interrupt_cli(cli, addr, lba, model, SIGINT);
  interrupt_cli(cli, addr, lba, model, SIGTERM);

  for (const std::string& a : {addr, slow}) {
    resets_default(fs, a);
    DriverPlan unbind = must(plan_unbind(fs, a), "plan unbind " + a);
    must(apply_plan(fs, unbind), "unbind " + a);
  }
  std::printf("LS_GUEST PASS\n");
  return 0;
}
