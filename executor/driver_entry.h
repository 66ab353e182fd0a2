// Driver API functions, fetched through the runtime (cudaGetDriverEntryPointByVersion), so that
// nothing links libcuda: CI machines have none, and the runtime finds the driver where it runs.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "executor/cuda_check.h"
#include "model/error.h"

namespace megacut::executor {

// Sets `fn` to the driver's `symbol` (CUDA 12.0 ABI); throws megacut::Error where it is missing.
template <class F>
void driver_entry(const char* symbol, F& fn) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found{};
  CUDA_CHECK(cudaGetDriverEntryPointByVersion(symbol, &p, 12000, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || p == nullptr) {
    throw Error(std::string("CUDA driver entry point ") + symbol + " not found");
  }
  fn = reinterpret_cast<F>(p);
}

}  // namespace megacut::executor
