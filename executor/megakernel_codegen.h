// A megakernel region's kernel, generated and compiled at run time: the source (one switch case
// per distinct tile body of the region, nothing else), NVRTC compilation with the options the
// conventional kernels are built with, and an on-disk cubin cache keyed by a hash of everything
// that decides the binary. Plain C++ and NVRTC: works without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/graph.h"

namespace megacut::executor {

inline constexpr const char* kRegionKernelName = "megacut_region_kernel";

// The distinct tile bodies (tile_body_name) of ops [op_begin, op_end), sorted: the kernel's
// cases in order, so that equal body sets share one binary.
std::vector<std::string> region_body_names(const model::Graph& graph, int op_begin, int op_end);

// The region kernel for `bodies` (tile_body_name strings; case k runs bodies[k]). Its block
// size is the largest kThreads among them (its __launch_bounds__), so the source alone fixes
// the binary. `timing` compiles in per-task %globaltimer records.
std::string region_kernel_source(const std::vector<std::string>& bodies, bool timing);

struct CompiledKernel {
  std::vector<char> cubin;
  std::string key;  // hex hash of source, options, headers and NVRTC version
  bool cache_hit = false;
  double compile_ms = 0;  // 0 on a cache hit
};

// Compiles `source` for sm_<arch> (e.g. 90), or takes it from the cache ($MEGACUT_CACHE_DIR,
// else ~/.cache/megacut/kernels; no cache when neither is usable). Throws megacut::Error with
// NVRTC's log, prefixed by `what` (which region), when compilation fails.
CompiledKernel compile_region_kernel(const std::string& source, int arch, const std::string& what);

// Where the cache lives ("" when there is none).
std::string kernel_cache_dir();

}  // namespace megacut::executor
