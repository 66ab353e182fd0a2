#include "executor/device.h"

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>

#include "executor/cuda_check.h"

namespace megacut::executor {

DeviceInfo current_device() {
  static std::mutex mutex;
  static std::map<int, DeviceInfo> known;  // by device ordinal
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard lock(mutex);
  if (const auto it = known.find(device); it != known.end()) return it->second;
  // Not while a stream is being captured: the first query of a device comes before any capture.
  CUDA_CHECK(cudaFree(nullptr));  // the runtime's primary context, which modules load into
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return known[device] = {prop.name,
                          prop.major * 10 + prop.minor,
                          prop.multiProcessorCount,
                          prop.l2CacheSize,
                          prop.regsPerMultiprocessor,
                          static_cast<int>(prop.sharedMemPerBlockOptin),
                          static_cast<int64_t>(prop.sharedMemPerMultiprocessor),
                          prop.maxThreadsPerMultiProcessor,
                          prop.maxBlocksPerMultiProcessor,
                          static_cast<int64_t>(prop.reservedSharedMemPerBlock)};
}

}  // namespace megacut::executor
