// The current CUDA device, as megacut reads it: one query of its properties for every caller
// (the runner, megakernel regions, the profiler's micro-benchmarks, validation, bench_ops).
// A plain C++ header: callers need no CUDA header to read it.
#pragma once

#include <cstdint>
#include <string>

namespace megacut::executor {

struct DeviceInfo {
  std::string name;  // e.g. "NVIDIA H200"
  int arch = 0;      // compute capability as major * 10 + minor, e.g. 90
  int sm_count = 0;
  int64_t l2_bytes = 0;
  int registers_per_sm = 0;
  int smem_per_block_optin = 0;  // bytes of shared memory a block may opt in to
  int64_t smem_per_sm = 0;
  int threads_per_sm = 0;               // resident threads an SM holds
  int ctas_per_sm = 0;                  // resident CTAs an SM holds
  int64_t reserved_smem_per_block = 0;  // shared memory the system takes per resident CTA
};

// The device the calling thread's CUDA runtime is on, its primary context created; its
// properties are queried once per device and process. Thread-safe.
DeviceInfo current_device();

}  // namespace megacut::executor
