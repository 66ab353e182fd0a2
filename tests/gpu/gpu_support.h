// What the GPU suites share: skipping without a device, device buffers, bf16 on the host,
// deterministic random inputs (never zeros) and tolerance checks against float64 references.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "executor/bf16.h"
#include "executor/cuda_check.h"
#include "executor/device_memory.h"

namespace megacut::testing {

inline bool has_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

#define MEGACUT_REQUIRE_GPU()                                          \
  do {                                                                 \
    if (!::megacut::testing::has_gpu()) GTEST_SKIP() << "no CUDA GPU"; \
  } while (0)

inline uint16_t to_bf16(float f) { return executor::float_to_bf16(f); }
inline float from_bf16(uint16_t h) { return executor::bf16_to_float(h); }
inline float bf16_round(float f) { return executor::round_to_bf16(f); }

// Uniform in [lo, hi) from a hash of (seed, i): reproducible, order-free, fast.
inline float uniform(uint64_t seed, uint64_t i, float lo = -1.f, float hi = 1.f) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + i + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return lo + (hi - lo) * static_cast<float>(z >> 40) * (1.f / 16777216.f);
}

// n bf16-representable values in [lo, hi), none exactly zero.
inline std::vector<float> random_bf16(uint64_t seed, int64_t n, float lo = -1.f, float hi = 1.f) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) {
    float x = bf16_round(uniform(seed, i, lo, hi));
    if (x == 0.f) x = bf16_round(0.5f * (lo + hi) + 0.01f * (hi - lo) + 1e-3f);
    v[i] = x;
  }
  return v;
}

// Device memory, poisoned (all bytes 0xff: NaN in bf16 and f32, -1 in int32) when made.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    CUDA_CHECK(cudaMalloc(&ptr_, bytes ? bytes : 1));
    poison();
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  void poison() {
    CUDA_CHECK(cudaMemset(ptr_, 0xff, bytes_));
    executor::wait_for_legacy_stream();
  }
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

inline DeviceBuffer upload_bf16(std::span<const float> values) {
  std::vector<uint16_t> h(values.size());
  for (size_t i = 0; i < values.size(); ++i) h[i] = to_bf16(values[i]);
  DeviceBuffer d(h.size() * 2);
  CUDA_CHECK(cudaMemcpy(d.get(), h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  executor::wait_for_legacy_stream();
  return d;
}

template <typename T>
DeviceBuffer upload(std::span<const T> values) {
  DeviceBuffer d(values.size_bytes());
  CUDA_CHECK(cudaMemcpy(d.get(), values.data(), values.size_bytes(), cudaMemcpyHostToDevice));
  executor::wait_for_legacy_stream();
  return d;
}

inline std::vector<uint16_t> download_bits(const DeviceBuffer& d, size_t n) {
  std::vector<uint16_t> h(n);
  CUDA_CHECK(cudaMemcpy(h.data(), d.get(), n * 2, cudaMemcpyDeviceToHost));
  return h;
}

inline std::vector<float> download_bf16(const DeviceBuffer& d, size_t n) {
  std::vector<uint16_t> h = download_bits(d, n);
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = from_bf16(h[i]);
  return f;
}

template <typename T>
std::vector<T> download(const DeviceBuffer& d, size_t n) {
  std::vector<T> h(n);
  CUDA_CHECK(cudaMemcpy(h.data(), d.get(), n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

struct Tolerance {
  double atol;
  double rtol;
};

// Compares got against ref element by element: |got - ref| <= atol + rtol * |ref|, NaN never
// passes. `cols` only shapes the (row, col) of the first mismatches reported.
inline ::testing::AssertionResult close_to(std::span<const float> got, std::span<const double> ref,
                                           Tolerance tol, int64_t cols) {
  if (got.size() != ref.size()) {
    return ::testing::AssertionFailure()
           << "size " << got.size() << " != reference size " << ref.size();
  }
  int64_t bad = 0;
  double max_err = 0, err_sq = 0, ref_sq = 0;
  std::ostringstream first;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(double(got[i]) - ref[i]);
    err_sq += std::isfinite(err) ? err * err : 0;
    ref_sq += ref[i] * ref[i];
    if (!(err <= tol.atol + tol.rtol * std::abs(ref[i]))) {
      if (bad < 5) {
        first << "\n  (" << i / cols << ", " << i % cols << "): got " << got[i] << ", reference "
              << ref[i];
      }
      ++bad;
    }
    if (std::isfinite(err)) max_err = std::max(max_err, err);
  }
  const double rel_l2 = std::sqrt(err_sq / std::max(ref_sq, 1e-300));
  if (bad > 0) {
    return ::testing::AssertionFailure()
           << bad << " of " << got.size() << " elements outside atol " << tol.atol << " + rtol "
           << tol.rtol << " (max error " << max_err << ", relative L2 " << rel_l2 << ")"
           << first.str();
  }
  return ::testing::AssertionSuccess()
         << got.size() << " elements, max error " << max_err << ", relative L2 " << rel_l2;
}

// ||a - b|| / ||b|| over [begin, begin + n); infinite where a is not finite.
inline double rel_l2(const std::vector<float>& a, const std::vector<float>& b, size_t begin,
                     size_t n) {
  double diff = 0, norm = 0;
  for (size_t i = begin; i < begin + n; ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  return std::isfinite(diff) ? std::sqrt(diff / std::max(norm, 1e-30)) : INFINITY;
}

}  // namespace megacut::testing
