#include "executor/watchdog.h"

#include "executor/cuda_check.h"
#include "model/error.h"

namespace megacut::executor {

void WatchdogRecord::check(cudaStream_t stream, const std::string& region, uint64_t watchdog_ns,
                           const std::function<std::string(int counter)>& describe) {
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const mk::ErrorRecord e = record_.download()[0];
  if (e.flag == 0) return;
  CUDA_CHECK(cudaMemset(record_.get(), 0, sizeof e));
  wait_for_legacy_stream();  // cleared before the region's next launch on `stream`
  throw Error(region + ": watchdog: on SM " + std::to_string(e.sm) + ", block " +
              std::to_string(e.block) + ", " + describe(e.task) + " waited for " +
              describe(e.counter) + " to reach " + std::to_string(e.target) + " but it stayed at " +
              std::to_string(e.seen) + " for " + std::to_string(watchdog_ns / 1000) +
              " us; the region gave up");
}

}  // namespace megacut::executor
