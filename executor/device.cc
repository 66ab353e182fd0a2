#include "executor/device.h"

#include <cuda_runtime_api.h>

#include "executor/cuda_check.h"

namespace megacut::executor {

DeviceInfo current_device() {
  int device = 0;
  CUDA_CHECK(cudaFree(nullptr));  // the runtime's primary context, which modules load into
  CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return {prop.name,
          prop.major * 10 + prop.minor,
          prop.multiProcessorCount,
          prop.l2CacheSize,
          prop.regsPerMultiprocessor,
          static_cast<int>(prop.sharedMemPerBlockOptin),
          static_cast<int64_t>(prop.sharedMemPerMultiprocessor)};
}

}  // namespace megacut::executor
