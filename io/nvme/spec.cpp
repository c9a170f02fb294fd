// Status decoding: the (type, code) pairs a read-only driver can meet, named
// as the NVMe base specification names them; anything else prints its numbers.
#include "io/nvme/spec.h"

#include <cstdio>

namespace ls::nvme {

namespace {

const char* generic_name(uint8_t code) {
  switch (code) {
    case 0x00:
      return "success";
    case 0x01:
      return "invalid command opcode";
    case 0x02:
      return "invalid field in command";
    case 0x03:
      return "command id conflict";
    case 0x04:
      return "data transfer error";
    case 0x05:
      return "aborted due to power loss notification";
    case 0x06:
      return "internal error";
    case 0x07:
      return "command abort requested";
    case 0x08:
      return "aborted due to SQ deletion";
    case 0x09:
      return "aborted due to failed fused command";
    case 0x0A:
      return "aborted due to missing fused command";
    case 0x0B:
      return "invalid namespace or format";
    case 0x0C:
      return "command sequence error";
    case 0x13:
      return "PRP offset invalid";
    case 0x15:
      return "operation denied";
    case 0x80:
      return "LBA out of range";
    case 0x81:
      return "capacity exceeded";
    case 0x82:
      return "namespace not ready";
    case 0x83:
      return "reservation conflict";
    case 0x84:
      return "format in progress";
    default:
      return nullptr;
  }
}

const char* command_specific_name(uint8_t code) {
  switch (code) {
    case 0x00:
      return "completion queue invalid";
    case 0x01:
      return "invalid queue identifier";
    case 0x02:
      return "invalid queue size";
    case 0x03:
      return "abort command limit exceeded";
    case 0x08:
      return "invalid interrupt vector";
    case 0x0C:
      return "invalid queue deletion";
    case 0x0D:
      return "feature identifier not saveable";
    case 0x0E:
      return "feature not changeable";
    case 0x80:
      return "conflicting attributes";
    case 0x81:
      return "invalid protection information";
    default:
      return nullptr;
  }
}

const char* media_name(uint8_t code) {
  switch (code) {
    case 0x80:
      return "write fault";
    case 0x81:
      return "unrecovered read error";
    case 0x82:
      return "end-to-end guard check error";
    case 0x83:
      return "end-to-end application tag check error";
    case 0x84:
      return "end-to-end reference tag check error";
    case 0x85:
      return "compare failure";
    case 0x86:
      return "access denied";
    case 0x87:
      return "deallocated or unwritten logical block";
    default:
      return nullptr;
  }
}

}  // namespace

std::string status_string(uint16_t status) {
  const uint8_t type = status_type(status);
  const uint8_t code = status_code(status);
  const char* type_name = nullptr;  // stays null for a reserved type
  const char* name = nullptr;
  switch (type) {
    case sct::kGeneric:
      type_name = "generic";
      name = generic_name(code);
      break;
    case sct::kCommandSpecific:
      type_name = "command specific";
      name = command_specific_name(code);
      break;
    case sct::kMedia:
      type_name = "media";
      name = media_name(code);
      break;
    case sct::kPath:
      type_name = "path";
      break;
    case sct::kVendor:
      type_name = "vendor specific";
      break;
    default:
      break;
  }
  // The name first, then the numbers as the specification gives them (so a
  // message can be looked up), and Do Not Retry: the controller's word that
  // the same command would fail again.
  const char* dnr = (status & kStatusDnr) ? ", do not retry" : "";
  char buf[160];
  if (name != nullptr) {
    std::snprintf(buf, sizeof buf, "%s (SCT %u %s, SC 0x%02x%s)", name, type, type_name, code, dnr);
  } else if (type_name != nullptr) {
    std::snprintf(buf, sizeof buf, "status code 0x%02x (SCT %u %s, SC 0x%02x%s)", code, type,
                  type_name, code, dnr);
  } else {
    std::snprintf(buf, sizeof buf, "status code 0x%02x (SCT %u reserved, SC 0x%02x%s)", code, type,
                  code, dnr);
  }
  return buf;
}

}  // namespace ls::nvme
