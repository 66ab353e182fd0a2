// Owners of device resources for host code: an array in device memory and a captured CUDA
// graph. Not copyable; freed when dropped.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "executor/cuda_check.h"

namespace megacut::executor {

// Waits until everything issued to the legacy default stream has landed. The host's cudaMemset
// and cudaMemcpy go there (megacut does not build with a per-thread default stream), may return
// before they land (a memset of device memory; a copy from pageable memory once it is staged),
// and a non-blocking stream (the runner's, the profiler's, the tests') does not wait for them: a
// kernel on one that reads what the host wrote must be launched after this. (It does not order
// the other way: a host write over memory a kernel still reads waits for that kernel's stream.)
inline void wait_for_legacy_stream() { CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy)); }

// `n` elements of T in device memory, zeroed by the time the constructor returns (one element's
// room for n = 0, so that get() is a valid address).
template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(size_t n) : n_(n) {
    allocate();
    CUDA_CHECK(cudaMemset(ptr_, 0, std::max<size_t>(n, 1) * sizeof(T)));
    wait_for_legacy_stream();
  }
  // A copy of `host`, landed by the time the constructor returns.
  explicit DeviceArray(const std::vector<T>& host) : n_(host.size()) {
    allocate();
    if (host.empty()) {
      CUDA_CHECK(cudaMemset(ptr_, 0, sizeof(T)));
    } else {
      CUDA_CHECK(cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    }
    wait_for_legacy_stream();
  }
  ~DeviceArray() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept { *this = std::move(o); }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(n_, o.n_);
    return *this;
  }

  T* get() const { return ptr_; }
  size_t size() const { return n_; }
  // The elements, copied to the host through the legacy stream: a kernel on a non-blocking stream
  // that writes them must have been waited for.
  std::vector<T> download() const {
    std::vector<T> host(n_);
    if (n_ > 0) CUDA_CHECK(cudaMemcpy(host.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  void allocate() {
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), std::max<size_t>(n_, 1) * sizeof(T)));
  }

  T* ptr_ = nullptr;
  size_t n_ = 0;
};

// A CUDA graph captured from one stream, and its executable.
class CudaGraph {
 public:
  CudaGraph() = default;
  ~CudaGraph() {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
    if (graph_ != nullptr) cudaGraphDestroy(graph_);
  }
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  // Captures what `launch` issues on `stream`; a launch that throws ends the capture first.
  template <class Launch>
  void capture(cudaStream_t stream, Launch&& launch) {
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    try {
      launch();
    } catch (...) {
      cudaGraph_t partial = nullptr;
      cudaStreamEndCapture(stream, &partial);
      if (partial != nullptr) cudaGraphDestroy(partial);
      throw;
    }
    CUDA_CHECK(cudaStreamEndCapture(stream, &graph_));
    CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
  }
  bool captured() const { return exec_ != nullptr; }
  void replay(cudaStream_t stream) const { CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace megacut::executor
