// Synthetic profiles for tests and benchmarks: every duration follows from each op's TileCost
// at assumed device rates, so tests can predict what the simulator must answer. Never a
// stand-in for a measured profile.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/profile.h"

namespace megacut::testing {

struct SyntheticDevice {
  std::string name = "synthetic GPU";
  int sm_count = 8;
  double bytes_per_ns = 1000;        // device bandwidth (1 TB/s)
  double flops_per_ns_per_sm = 500;  // one SM's arithmetic rate
  int64_t registers_per_sm = 65536;
  int64_t task_overhead_ns = 300;     // per task in a persistent region
  int64_t kernel_overhead_ns = 2000;  // per conventional kernel
  int64_t kernel_gap_ns = 800;
  int64_t kernel_gap_pdl_ns = 300;
  int64_t graph_launch_ns = 4000;
  int64_t region_launch_ns = 3000;
  int64_t region_drain_ns = 1000;
  int64_t signal_latency_ns = 400;
  int64_t dependency_check_round_ns = 200;  // 0: left out of the profile, as in older ones
  int64_t region_startup_ns = 500;    // a CTA's start to its first task; 0: left out, likewise
  int64_t dependent_launch_ns = 600;  // 0: left out, likewise
  int64_t flagged_word_hop_ns = 200;  // 0: left out, likewise
  // Whether every op's body takes and gives flagged words (OpProfile::flagged_words; recorded
  // where the word hop is measured).
  bool flagged_words = false;
  bool sm_limits = true;  // an SM of a Hopper GPU; false: left out, likewise
  // > 0: each linear and lm-head op also has a cuBLASLt kernel (OpProfile::conv_cublaslt) that
  // takes this multiple of its own kernel's time; 0: none, as in older profiles.
  double cublaslt_ratio = 0;
  // Tensor parallel: the graphs are one rank's of tp GPUs. A collective (all-reduce,
  // all-gather) takes its kernel overhead, the link latency and its link bytes at the link
  // bandwidth beside its local bytes, and has no task benchmark. With collective_benchmarks,
  // micro.collectives times each kind at message sizes of 4 KB to 64 MB as the link latency and
  // its link bytes (model::ring_link_bytes) at the link bandwidth, so that mk regions can run
  // collectives as communication tasks; without, no mk region can.
  int64_t tp = 1;
  double link_bytes_per_ns = 100;  // 100 GB/s a GPU
  int64_t link_latency_ns = 5000;
  bool collective_benchmarks = true;
};

// Per-task time at x tasks in flight: overhead + flops / SM rate + x * bytes / bandwidth,
// which the simulator's fit recovers exactly.
model::Profile synthetic_profile(const std::string& model, const std::vector<int64_t>& batches,
                                 int64_t prompt_len, const SyntheticDevice& device = {});

}  // namespace megacut::testing
