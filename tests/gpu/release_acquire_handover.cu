// A minimal reproduction for compute-sanitizer's racecheck: a word handed from one thread to
// another in shared memory by a flag written with st.release.cta and polled with ld.acquire.cta,
// no barrier between them, the pattern of a megakernel region's consumers and signaler
// (executor/megakernel_runtime.cuh: `done`). By the PTX memory model the two flag accesses are
// morally strong and the release/acquire pair orders the word's write before its read: there is
// no data race. racecheck has no model of release/acquire and reports a RAW hazard on the flag;
// handing over with __syncthreads (variant 1) it reports none. scripts/sanitize.sh runs both and
// accepts a region kernel's hazard only where both its accesses are such strong operations.
//
//   release_acquire_handover [VARIANT=0]   prints what every block read (42)
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "executor/tiles/common.cuh"

__global__ void handover(int variant, int* out) {
  __shared__ int word, flag;
  if (threadIdx.x == 0) flag = 0;
  __syncthreads();
  const unsigned flag_address = megacut::tiles::shared_address(&flag);
  if (variant == 0) {
    if (threadIdx.x == 0) {
      word = 42;
      asm volatile("st.release.cta.shared.s32 [%0], %1;" ::"r"(flag_address), "r"(1) : "memory");
    } else if (threadIdx.x == 288) {  // another warpgroup, as the signaler
      int f = 0;
      while (f == 0) {
        asm volatile("ld.acquire.cta.shared.s32 %0, [%1];"
                     : "=r"(f)
                     : "r"(flag_address)
                     : "memory");
      }
      out[blockIdx.x] = word;
    }
  } else {
    if (threadIdx.x == 0) word = 42;
    __syncthreads();
    if (threadIdx.x == 288) out[blockIdx.x] = word;
  }
}

int main(int argc, char** argv) {
  const int variant = argc > 1 ? std::atoi(argv[1]) : 0;
  constexpr int kBlocks = 4;
  int* out = nullptr;
  if (cudaMalloc(&out, kBlocks * sizeof(int)) != cudaSuccess) {
    std::fprintf(stderr, "release_acquire_handover: no CUDA GPU\n");
    return 2;
  }
  handover<<<kBlocks, 384>>>(variant, out);
  int read[kBlocks] = {};
  const cudaError_t status = cudaMemcpy(read, out, sizeof read, cudaMemcpyDeviceToHost);
  std::printf("variant %d: %s, read %d %d %d %d\n", variant, cudaGetErrorString(status), read[0],
              read[1], read[2], read[3]);
  cudaFree(out);
  for (int r : read) {
    if (r != 42) return 1;
  }
  return status == cudaSuccess ? 0 : 1;
}
