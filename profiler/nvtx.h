// NVTX ranges in the "megacut" domain, so that Nsight Systems shows which op and stage each
// eager launch belongs to. Header-only NVTX3: with no tool attached a range costs a branch.
#pragma once

#include <nvtx3/nvToolsExt.h>

#include <string>

namespace megacut::profiler {

class NvtxRange {
 public:
  explicit NvtxRange(const std::string& name) {
    nvtxEventAttributes_t attributes{};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = name.c_str();
    nvtxDomainRangePushEx(domain(), &attributes);
  }
  ~NvtxRange() { nvtxDomainRangePop(domain()); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

 private:
  static nvtxDomainHandle_t domain() {
    static const nvtxDomainHandle_t handle = nvtxDomainCreateA("megacut");
    return handle;
  }
};

}  // namespace megacut::profiler
