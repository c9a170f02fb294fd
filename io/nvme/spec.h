// NVMe facts the driver needs, from the NVMe base specification: controller
// register offsets and fields (BAR0), the 64-byte submission and 16-byte
// completion queue entries, opcodes, Identify layouts, and a status decoder
// that turns a completion's (type, code) into words a user can act on.
// defines: nvme::reg::*, nvme::cap_*(), nvme::cc::*, nvme::csts::*,
//          nvme::sq_doorbell(), nvme::cq_doorbell(), nvme::SubmissionEntry,
//          nvme::CompletionEntry, nvme::admin::*, nvme::io::*,
//          nvme::status_string()
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ls::nvme {

// ---- Controller registers (byte offsets into BAR0) ----
namespace reg {
constexpr uint32_t kCap = 0x00;  // 64-bit: capabilities
constexpr uint32_t kVs = 0x08;   // version
constexpr uint32_t kIntms = 0x0C;
constexpr uint32_t kIntmc = 0x10;
constexpr uint32_t kCc = 0x14;    // controller configuration
constexpr uint32_t kCsts = 0x1C;  // controller status
constexpr uint32_t kAqa = 0x24;   // admin queue attributes
constexpr uint32_t kAsq = 0x28;   // 64-bit: admin SQ base
constexpr uint32_t kAcq = 0x30;   // 64-bit: admin CQ base
constexpr uint32_t kDoorbells = 0x1000;
}  // namespace reg

// CAP fields. MQES is 0's based: a queue may hold MQES + 1 entries.
inline uint32_t cap_mqes(uint64_t cap) {
  return static_cast<uint32_t>(cap & 0xFFFF);
}
inline bool cap_cqr(uint64_t cap) {
  return (cap >> 16) & 1;
}  // queues must be contiguous
inline uint32_t cap_to(uint64_t cap) {
  return (cap >> 24) & 0xFF;
}  // 500 ms units
inline uint32_t cap_dstrd(uint64_t cap) {
  return (cap >> 32) & 0xF;
}
inline uint32_t cap_css(uint64_t cap) {
  return (cap >> 37) & 0xFF;
}  // bit 0: NVM command set
inline uint32_t cap_mpsmin(uint64_t cap) {
  return (cap >> 48) & 0xF;
}  // page = 4 KiB << n
inline uint32_t cap_mpsmax(uint64_t cap) {
  return (cap >> 52) & 0xF;
}

// VS: major.minor.tertiary.
inline uint32_t vs_major(uint32_t vs) {
  return vs >> 16;
}
inline uint32_t vs_minor(uint32_t vs) {
  return (vs >> 8) & 0xFF;
}

namespace cc {
constexpr uint32_t kEn = 1u << 0;
constexpr uint32_t kCssShift = 4;   // 3 bits; 0 = NVM command set
constexpr uint32_t kMpsShift = 7;   // 4 bits; page = 4 KiB << MPS
constexpr uint32_t kAmsShift = 11;  // 3 bits; 0 = round robin
constexpr uint32_t kShnShift = 14;  // 2 bits; 1 = normal shutdown
constexpr uint32_t kShnMask = 3u << kShnShift;
constexpr uint32_t kShnNormal = 1u << kShnShift;
constexpr uint32_t kIosqesShift = 16;  // 4 bits; log2(SQ entry size) = 6
constexpr uint32_t kIocqesShift = 20;  // 4 bits; log2(CQ entry size) = 4
}  // namespace cc

namespace csts {
constexpr uint32_t kRdy = 1u << 0;
constexpr uint32_t kCfs = 1u << 1;  // controller fatal status
constexpr uint32_t kShstShift = 2;  // 2 bits: 0 normal, 1 in progress, 2 complete
constexpr uint32_t kShstMask = 3u << kShstShift;
constexpr uint32_t kShstComplete = 2u << kShstShift;
}  // namespace csts

// AQA: both sizes 0's based, 12 bits each.
inline uint32_t aqa(uint32_t sq_entries, uint32_t cq_entries) {
  return ((cq_entries - 1) << 16) | (sq_entries - 1);
}

// Doorbells: queue y's SQ tail at 0x1000 + 2y * stride, its CQ head at
// 0x1000 + (2y + 1) * stride, where stride = 4 << CAP.DSTRD bytes.
inline uint32_t doorbell_stride(uint64_t cap) {
  return 4u << cap_dstrd(cap);
}
inline uint32_t sq_doorbell(uint16_t qid, uint32_t stride) {
  return reg::kDoorbells + (2u * qid) * stride;
}
inline uint32_t cq_doorbell(uint16_t qid, uint32_t stride) {
  return reg::kDoorbells + (2u * qid + 1) * stride;
}

constexpr uint32_t kPageSize = 4096;  // CC.MPS = 0: the only page size the driver uses
constexpr uint32_t kSqEntryLog2 = 6;
constexpr uint32_t kCqEntryLog2 = 4;

// ---- Queue entries ----
// Submission queue entry: CDW0 = opcode (7:0), fused (9:8), PSDT (15:14),
// command id (31:16); then NSID, two reserved dwords, the metadata pointer,
// the two PRP entries and CDW10..15 (command specific).
struct SubmissionEntry {
  uint8_t opcode = 0;
  uint8_t flags = 0;  // fused operation and PSDT; 0 = not fused, PRPs
  uint16_t cid = 0;
  uint32_t nsid = 0;
  uint32_t cdw2 = 0;
  uint32_t cdw3 = 0;
  uint64_t mptr = 0;
  uint64_t prp1 = 0;
  uint64_t prp2 = 0;
  uint32_t cdw10 = 0;
  uint32_t cdw11 = 0;
  uint32_t cdw12 = 0;
  uint32_t cdw13 = 0;
  uint32_t cdw14 = 0;
  uint32_t cdw15 = 0;
};
static_assert(sizeof(SubmissionEntry) == 64);
static_assert(offsetof(SubmissionEntry, prp1) == 24);
static_assert(offsetof(SubmissionEntry, cdw10) == 40);

// Completion queue entry: DW0 command specific; DW2 = SQ head (15:0) and SQ
// id (31:16); DW3 = command id (15:0), phase (16), status (31:17).
struct CompletionEntry {
  uint32_t dw0 = 0;
  uint32_t dw1 = 0;
  uint16_t sq_head = 0;
  uint16_t sq_id = 0;
  uint16_t cid = 0;
  uint16_t status_phase = 0;  // bit 0: phase tag; bits 15:1: status field
};
static_assert(sizeof(CompletionEntry) == 16);
static_assert(offsetof(CompletionEntry, cid) == 12);

// The status field (15 bits, without the phase): SC (7:0), SCT (10:8),
// CRD (12:11), More (13), DNR (14).
inline uint16_t cqe_status(uint16_t status_phase) {
  return status_phase >> 1;
}
inline bool cqe_phase(uint16_t status_phase) {
  return status_phase & 1;
}
inline uint8_t status_code(uint16_t status) {
  return status & 0xFF;
}
inline uint8_t status_type(uint16_t status) {
  return (status >> 8) & 0x7;
}
inline uint16_t make_status(uint8_t sct, uint8_t sc) {
  return static_cast<uint16_t>((sct & 0x7) << 8 | sc);
}
constexpr uint16_t kStatusDnr = 1u << 14;  // Do Not Retry

namespace sct {
constexpr uint8_t kGeneric = 0;
constexpr uint8_t kCommandSpecific = 1;
constexpr uint8_t kMedia = 2;
constexpr uint8_t kPath = 3;
constexpr uint8_t kVendor = 7;
}  // namespace sct

namespace sc {
constexpr uint8_t kSuccess = 0x00;
constexpr uint8_t kInvalidOpcode = 0x01;
constexpr uint8_t kInvalidField = 0x02;
constexpr uint8_t kDataTransferError = 0x04;
constexpr uint8_t kInternalError = 0x06;
constexpr uint8_t kAbortedSqDeletion = 0x08;
constexpr uint8_t kInvalidNamespace = 0x0B;
constexpr uint8_t kLbaOutOfRange = 0x80;
// command specific
constexpr uint8_t kInvalidCq = 0x00;
constexpr uint8_t kInvalidQid = 0x01;
constexpr uint8_t kInvalidQueueSize = 0x02;
constexpr uint8_t kInvalidQueueDeletion = 0x0C;
// media and data integrity
constexpr uint8_t kUnrecoveredReadError = 0x81;
}  // namespace sc

// "LBA out of range (SCT 0 generic, SC 0x80, do not retry)",
// "unrecovered read error (SCT 2 media, SC 0x81)".
std::string status_string(uint16_t status);

// ---- Opcodes ----
namespace admin {
constexpr uint8_t kDeleteIoSq = 0x00;
constexpr uint8_t kCreateIoSq = 0x01;
constexpr uint8_t kGetLogPage = 0x02;
constexpr uint8_t kDeleteIoCq = 0x04;
constexpr uint8_t kCreateIoCq = 0x05;
constexpr uint8_t kIdentify = 0x06;
constexpr uint8_t kAbort = 0x08;
constexpr uint8_t kSetFeatures = 0x09;
constexpr uint8_t kGetFeatures = 0x0A;
constexpr uint8_t kFormatNvm = 0x80;
constexpr uint8_t kSanitize = 0x84;
constexpr uint8_t kFirmwareCommit = 0x10;
constexpr uint8_t kFirmwareDownload = 0x11;
// Identify CNS values (CDW10 7:0) and the feature this driver sets.
constexpr uint8_t kCnsNamespace = 0x00;
constexpr uint8_t kCnsController = 0x01;
constexpr uint8_t kFeatureNumQueues = 0x07;
}  // namespace admin

namespace io {
constexpr uint8_t kFlush = 0x00;
constexpr uint8_t kWrite = 0x01;
constexpr uint8_t kRead = 0x02;
constexpr uint8_t kWriteUncorrectable = 0x04;
constexpr uint8_t kCompare = 0x05;
constexpr uint8_t kWriteZeroes = 0x08;
constexpr uint8_t kDatasetManagement = 0x09;
}  // namespace io

// ---- Identify data (4096 bytes each): the byte offsets this driver reads ----
namespace idctl {
constexpr size_t kVid = 0;    // u16
constexpr size_t kSn = 4;     // 20 ASCII bytes, space padded
constexpr size_t kMn = 24;    // 40 ASCII bytes
constexpr size_t kFr = 64;    // 8 ASCII bytes
constexpr size_t kMdts = 77;  // u8: max transfer = (4 KiB << MPSMIN) << MDTS; 0 = no limit
constexpr size_t kNn = 516;   // u32: number of namespaces
}  // namespace idctl
namespace idns {
constexpr size_t kNsze = 0;     // u64: size in logical blocks
constexpr size_t kNcap = 8;     // u64
constexpr size_t kNlbaf = 25;   // u8: number of LBA formats, 0's based
constexpr size_t kFlbas = 26;   // u8: format in use: bits 3:0 (+ bits 6:5 as high bits)
constexpr size_t kLbaf0 = 128;  // 16 x u32: MS (15:0), LBADS (23:16) = log2(block size)
}  // namespace idns
constexpr size_t kIdentifyBytes = 4096;

}  // namespace ls::nvme
