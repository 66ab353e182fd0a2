// A DeviceArray is zeroed for a kernel on a non-blocking stream: the host's memsets go to the
// legacy default stream, which such a stream does not wait for, so the constructor waits for it.
#include <gtest/gtest.h>

#include <cstdint>

#include "executor/device_memory.h"
#include "executor/tiles/common.cuh"
#include "tests/gpu/gpu_support.h"

namespace megacut::testing {
namespace {

using executor::DeviceArray;

__global__ void spin_for(unsigned long long ns) {
  const unsigned long long start = tiles::globaltimer_ns();
  while (tiles::globaltimer_ns() - start < ns) {
  }
}

__global__ void copy_words(const uint64_t* from, uint64_t* to, int n) {
  for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x)) {
    to[i] = from[i];
  }
}

struct NonBlockingStream {
  cudaStream_t s = nullptr;
  NonBlockingStream() { CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~NonBlockingStream() { cudaStreamDestroy(s); }
};

constexpr int kWords = 4096;
constexpr unsigned long long kSpinNs = 50'000'000;  // 50 ms on the legacy stream

// A kernel on the legacy stream that spins for 50 ms: the constructor's memset waits behind it.
// Without the constructor's wait the legacy stream is still busy when it returns, and the reader
// (launched once before, so that loading it synchronizes nothing) runs at once and reads the
// memory as it was: ones, where cudaMalloc gives the freed memory back.
TEST(DeviceMemory, ZeroedBeforeAnotherStreamReads) {
  MEGACUT_REQUIRE_GPU();
  NonBlockingStream stream;
  DeviceArray<uint64_t> seen(kWords);
  copy_words<<<1, 256, 0, stream.s>>>(seen.get(), seen.get(), kWords);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaStreamSynchronize(stream.s));
  uintptr_t freed = 0;
  {
    DeviceArray<uint64_t> ones(kWords);
    CUDA_CHECK(cudaMemset(ones.get(), 0xff, kWords * sizeof(uint64_t)));
    CUDA_CHECK(cudaDeviceSynchronize());
    freed = reinterpret_cast<uintptr_t>(ones.get());
  }
  spin_for<<<1, 1>>>(kSpinNs);
  CUDA_CHECK(cudaGetLastError());
  const DeviceArray<uint64_t> zeroed(kWords);
  EXPECT_EQ(cudaStreamQuery(cudaStreamLegacy), cudaSuccess)
      << "the constructor returned before the legacy stream's memset landed";
  copy_words<<<1, 256, 0, stream.s>>>(zeroed.get(), seen.get(), kWords);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  int nonzero = 0;
  for (uint64_t v : seen.download()) nonzero += v != 0;
  EXPECT_EQ(nonzero, 0) << "of " << kWords << " words read on a non-blocking stream ("
                        << (reinterpret_cast<uintptr_t>(zeroed.get()) == freed
                                ? "memory that held ones"
                                : "cudaMalloc gave other memory")
                        << ")";
}

}  // namespace
}  // namespace megacut::testing
