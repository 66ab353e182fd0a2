// How our kernels are launched: cudaLaunchKernelEx with a configuration that carries the
// Programmatic Dependent Launch attribute when asked (the kernels' side of it is
// executor/grid_dependency.cuh). Captured into a CUDA graph, such a launch becomes a
// programmatic edge.
//
//   CUDA_CHECK(cudaLaunchKernelEx(KernelLaunch(grid, threads, smem_bytes, stream, pdl).config(),
//                                 kernel, args...));
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace megacut::executor {

class KernelLaunch {
 public:
  KernelLaunch(dim3 grid, dim3 block, size_t smem_bytes, cudaStream_t stream, bool pdl) {
    attribute_.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute_.val.programmaticStreamSerializationAllowed = 1;
    config_.gridDim = grid;
    config_.blockDim = block;
    config_.dynamicSmemBytes = smem_bytes;
    config_.stream = stream;
    config_.attrs = pdl ? &attribute_ : nullptr;
    config_.numAttrs = pdl ? 1 : 0;
  }
  KernelLaunch(const KernelLaunch&) = delete;  // config_ points into this object
  KernelLaunch& operator=(const KernelLaunch&) = delete;

  const cudaLaunchConfig_t* config() const { return &config_; }

 private:
  cudaLaunchAttribute attribute_{};
  cudaLaunchConfig_t config_{};
};

}  // namespace megacut::executor
