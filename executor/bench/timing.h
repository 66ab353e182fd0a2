// What the kernel benchmarks (bench_ops, bench_publish) share: the median time of a piece of
// stream work timed with CUDA events, and the device copy ceiling they print, measured with it.
// Host code.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "executor/cuda_check.h"

namespace megacut::executor {

// Milliseconds of `run()` (which enqueues work on `stream`): `warmups` untimed runs, then the
// element at samples / 2 of `samples` timed ones in order.
template <class Run>
float median_event_ms(cudaStream_t stream, int warmups, int samples, Run&& run) {
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < warmups; ++i) run();
  std::vector<float> ms(samples);
  for (float& m : ms) {
    CUDA_CHECK(cudaEventRecord(start, stream));
    run();
    CUDA_CHECK(cudaEventRecord(stop, stream));
    CUDA_CHECK(cudaEventSynchronize(stop));
    CUDA_CHECK(cudaEventElapsedTime(&m, start, stop));
  }
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  std::nth_element(ms.begin(), ms.begin() + samples / 2, ms.end());
  return ms[samples / 2];
}

// GB/s of a 1 GiB device-to-device copy, counting bytes read plus bytes written (median of 11
// after 2 warm-ups); the buffers hold a non-zero byte pattern.
inline double copy_ceiling_gbs(cudaStream_t stream) {
  const size_t bytes = size_t{1} << 30;
  void *src, *dst;
  CUDA_CHECK(cudaMalloc(&src, bytes));
  CUDA_CHECK(cudaMalloc(&dst, bytes));
  CUDA_CHECK(cudaMemsetAsync(src, 0x3c, bytes, stream));
  const float ms = median_event_ms(stream, 2, 11, [&] {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
  });
  CUDA_CHECK(cudaFree(src));
  CUDA_CHECK(cudaFree(dst));
  return 2.0 * bytes / (ms * 1e-3) / 1e9;
}

}  // namespace megacut::executor
