// A region's watchdog record (mk::ErrorRecord) on the device: the first dependency wait of a
// launch that gave up writes where it was (executor/tile_sync.cuh), and the host reads it once
// the region's stream has ended. Shared by mk regions and tile regions.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <string>

#include "executor/device_memory.h"
#include "executor/megakernel_abi.cuh"

namespace megacut::executor {

class WatchdogRecord {
 public:
  WatchdogRecord() : record_(1) {}

  mk::ErrorRecord* get() const { return record_.get(); }

  // Waits for `stream`; if a wait gave up, clears the record and throws megacut::Error:
  // "<region>: watchdog: on SM s, block b, <waiter> waited for <counter> to reach t but it stayed
  // at v for w us; the region gave up", `describe` naming the waiting task and the counter it
  // waited for (region-local counter indices).
  void check(cudaStream_t stream, const std::string& region, uint64_t watchdog_ns,
             const std::function<std::string(int counter)>& describe);

 private:
  DeviceArray<mk::ErrorRecord> record_;
};

}  // namespace megacut::executor
