// pdl_enabled() and PdlScope: see pdl.cuh.
#include <cstdlib>
#include <cstring>

#include "kernels/pdl.cuh"

namespace ls {
namespace {

thread_local bool t_scope = false;

bool device_allows() {
  static const bool on = [] {
    const char* e = std::getenv("LS_PDL");
    if (e && std::strcmp(e, "0") == 0) return false;
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return major >= 9;
  }();
  return on;
}

}  // namespace

bool pdl_enabled() {
  return t_scope && device_allows();
}

PdlScope::PdlScope() {
  t_scope = true;
}

PdlScope::~PdlScope() {
  t_scope = false;
}

}  // namespace ls
