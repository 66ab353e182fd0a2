// CUDA_CHECK: every CUDA runtime call goes through it; a failure throws megacut::Error naming
// the call, the file and line, and CUDA's error string.
#pragma once

#include <cuda_runtime_api.h>

#include "model/error.h"

namespace megacut::executor {

[[noreturn]] void throw_cuda_error(cudaError_t error, const char* expr, const char* file, int line);

inline void check_cuda(cudaError_t error, const char* expr, const char* file, int line) {
  if (error != cudaSuccess) throw_cuda_error(error, expr, file, line);
}

}  // namespace megacut::executor

#define CUDA_CHECK(expr) ::megacut::executor::check_cuda((expr), #expr, __FILE__, __LINE__)
