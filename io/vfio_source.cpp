#include "io/vfio_source.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <vector>

#include "io/gguf.h"
#include "io/nvme/controller.h"
#include "io/raw_gguf.h"
#include "io/vfio/vfio.h"

namespace ls {
namespace {

constexpr uint32_t kAlign = 4096;  // DMA buffers are page-aligned; reads in whole pages

class VfioSource final : public BlockSource {
 public:
  VfioSource(std::unique_ptr<VfioDevice> dev, std::unique_ptr<NvmeController> ctl, std::string path,
             uint64_t size, uint64_t lba, uint32_t qd, uint64_t chunk)
      : dev_(std::move(dev)),
        ctl_(std::move(ctl)),
        path_(std::move(path)),
        size_(size),
        lba_(lba),
        qd_(qd),
        chunk_(chunk) {}
  ~VfioSource() override {
    (void)ctl_->shutdown();  // no DMA after this
    for (const auto& b : mapped_) dev_->dma().unmap(b.first, b.second);
  }
  const char* name() const override { return "vfio"; }
  bool direct() const override { return true; }
  uint32_t alignment() const override { return kAlign; }
  uint64_t size() const override { return size_; }
  uint32_t queue_depth() const override { return qd_; }
  uint64_t chunk_bytes() const override { return chunk_; }

  Status register_buffers(std::span<const std::span<uint8_t>> bufs) override {
    for (const std::span<uint8_t>& b : bufs) {
      auto iova = dev_->dma().map(b.data(), b.size());
      if (!iova)
        return make_error("vfio: cannot map a staging buffer of %s for the device: %s",
                          format_bytes(b.size()).c_str(), iova.error().message.c_str());
      mapped_.push_back({b.data(), b.size()});
    }
    return ok();
  }

  Status submit(std::span<const ReadRequest> reqs) override {
    for (const ReadRequest& r : reqs) {
      if (r.offset + r.bytes > size_ || r.offset + r.bytes < r.offset)
        return make_error("read of %s at offset %llu (%llu bytes) via vfio: past the end (%llu)",
                          path_.c_str(), static_cast<unsigned long long>(r.offset),
                          static_cast<unsigned long long>(r.bytes),
                          static_cast<unsigned long long>(size_));
      if (reinterpret_cast<uintptr_t>(r.dst) % kAlign)
        return make_error("read of %s via vfio: the buffer is not %u-byte aligned", path_.c_str(),
                          kAlign);
    }
    pending_.insert(pending_.end(), reqs.begin(), reqs.end());
    return ok();
  }

  // Each request is read to the end here (the controller keeps its commands
  // in flight together); `timeout_ms` does not apply to a read under way.
  Status wait(size_t min, int, std::vector<ReadCompletion>& out) override {
    for (size_t done = 0; done < min && !pending_.empty(); ++done) {
      const ReadRequest r = pending_.front();
      pending_.pop_front();
      out.push_back(read(r));
    }
    return ok();
  }
  size_t in_flight() const override { return pending_.size(); }

 private:
  ReadCompletion read(const ReadRequest& r) {
    const ReadPlan p = plan_read(r.offset, r.bytes, kAlign);
    ReadCompletion c{r.tag, ok(), 0, p.lead};
    const uint64_t iova = dev_->dma().iova_of(r.dst);
    if (iova == 0) {
      c.status = make_error(
          "read of %s at offset %llu via vfio: the buffer is not mapped for the device "
          "(register_buffers)",
          path_.c_str(), static_cast<unsigned long long>(r.offset));
      return c;
    }
    const uint32_t bs = ctl_->info().block_size;
    for (uint64_t off = 0; off < p.aligned_bytes; off += chunk_) {
      const uint64_t n = std::min(chunk_, p.aligned_bytes - off);
      Status st = ctl_->read(lba_ + (p.aligned_offset + off) / bs, n / bs, iova + off);
      if (!st.ok()) {
        c.status = make_error("read of %s at offset %llu (%llu bytes) via vfio: %s", path_.c_str(),
                              static_cast<unsigned long long>(r.offset),
                              static_cast<unsigned long long>(r.bytes), st.error().message.c_str());
        return c;
      }
    }
    c.bytes = r.bytes;
    return c;
  }

  std::unique_ptr<VfioDevice> dev_;      // destroyed last: the mappings live in its container
  std::unique_ptr<NvmeController> ctl_;  // shut down in ~VfioSource, before the unmaps
  std::string path_;
  uint64_t size_, lba_;
  uint32_t qd_;
  uint64_t chunk_;
  std::deque<ReadRequest> pending_;
  std::vector<std::pair<void*, size_t>> mapped_;
};

}  // namespace

Expected<std::unique_ptr<BlockSource>> open_vfio_source(const std::string& path,
                                                        const SourceOptions& o) {
  if (o.nvme.empty())
    return make_error(
        "--reader vfio needs --nvme PCI_ADDRESS (the controller bound to vfio-pci: see "
        "`layerstream nvme status`) and --nvme-lba N (where the model was written)");
  auto file = GgufFile::open(path);
  if (!file) return file.error();
  auto dev = VfioDevice::open(o.nvme);
  if (!dev) return dev.error();
  NvmeControllerOptions co;
  co.io_queue_depth = std::clamp<uint32_t>(o.queue_depth, 1, 1023) + 1;  // one entry stays free
  auto ctl = NvmeController::open((*dev)->regs(), (*dev)->dma(), co);
  if (!ctl) return ctl.error();
  const NvmeControllerInfo& info = (*ctl)->info();
  if (kAlign % info.block_size)
    return make_error("vfio: %s has %u-byte blocks; the reader needs blocks that divide 4096",
                      o.nvme.c_str(), info.block_size);
  if (o.nvme_lba >= info.nsze)
    return make_error("--nvme-lba %llu is past the end of namespace %u (%llu blocks)",
                      static_cast<unsigned long long>(o.nvme_lba), info.nsid,
                      static_cast<unsigned long long>(info.nsze));
  // Commands of at most MDTS; chunks in whole pages.
  const uint64_t chunk = std::max<uint64_t>(
      kAlign, std::min<uint64_t>(o.chunk_bytes, info.max_transfer) / kAlign * kAlign);
  const uint64_t device_bytes = (info.nsze - o.nvme_lba) * info.block_size;
  // The check reads through a page of DMA memory of its own.
  auto page = (*dev)->dma().alloc(kAlign * 2);
  if (!page) return page.error();
  const uint32_t bs = info.block_size;
  NvmeController& c = **ctl;
  const RawRead read = [&](uint64_t off, uint64_t bytes, uint8_t* dst) -> Status {
    while (bytes > 0) {
      const uint64_t first = off / bs * bs, n = std::min<uint64_t>(bytes, kAlign - (off - first));
      LS_TRY(c.read(o.nvme_lba + first / bs, (off - first + n + bs - 1) / bs, page->iova));
      std::memcpy(dst, static_cast<uint8_t*>(page->host) + (off - first), n);
      off += n;
      dst += n;
      bytes -= n;
    }
    return ok();
  };
  const std::string where = "namespace " + std::to_string(info.nsid) + " of " + o.nvme +
                            " at LBA " + std::to_string(o.nvme_lba);
  Status st = verify_raw_gguf(**file, device_bytes, read, where);
  // On an error the controller goes down before the page is unmapped: after
  // a timeout a read into it may still be in flight. (NvmeController::read
  // disables the controller itself on a timeout; this keeps the order right
  // for any other error too.)
  if (!st.ok()) (void)c.shutdown();
  (*dev)->dma().free(*page);
  if (!st.ok()) return st.error();
  const uint64_t size = (*file)->file_size();
  if (device_bytes < (size + kAlign - 1) / kAlign * kAlign)
    return make_error("%s: the namespace ends within the model's last page", where.c_str());
  if (o.log)
    std::fprintf(stderr,
                 "layerstream: reading %s from %s (%s, %u-byte blocks, MDTS %s, qd %u, chunk "
                 "%s): checked against the file\n",
                 path.c_str(), where.c_str(), info.model.c_str(), bs,
                 format_bytes(info.max_transfer).c_str(), o.queue_depth,
                 format_bytes(chunk).c_str());
  return std::unique_ptr<BlockSource>(new VfioSource(std::move(*dev), std::move(*ctl), path, size,
                                                     o.nvme_lba, o.queue_depth, chunk));
}

}  // namespace ls
