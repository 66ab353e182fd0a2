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

// What ptxas said of a kernel it assembled (its -v report): per thread, the registers and the
// bytes of stack (with the frames of the functions it calls), spill stores and spill loads (its
// own and those of any function ptxas kept apart from it rather than inline: a region kernel's
// run_region can be). -1: not known (a kernel from the cache whose report was not kept).
struct PtxasReport {
  int registers = -1;
  int stack_bytes = -1;
  int spill_store_bytes = -1;
  int spill_load_bytes = -1;
  bool known() const { return registers >= 0; }
};

// The report of the kernel named `kernel` in NVRTC's log of a compilation with ptxas -v; fields
// the log does not give stay -1.
PtxasReport parse_ptxas_report(const std::string& log, const std::string& kernel);

// The bytes of machine code in a cubin: its functions' ELF sections .text.<function>, the kernel's
// and those of any function ptxas kept apart from it. For a region's cubin (one kernel), all the
// code its tasks run their bodies from. -1 where the cubin has none or is not a well-formed
// 64-bit ELF file.
long long cubin_code_bytes(const std::vector<char>& cubin);

struct CompiledKernel {
  std::vector<char> cubin;
  std::string key;  // hex hash of source, options, headers and NVRTC version
  bool cache_hit = false;
  double compile_ms = 0;  // 0 on a cache hit
  PtxasReport ptxas;      // kept beside the cubin in the cache
};

// Compiles `source` for sm_<arch> (e.g. 90), or takes it from the cache ($MEGACUT_CACHE_DIR,
// else ~/.cache/megacut/kernels; no cache when neither is usable), with ptxas's report of
// kRegionKernelName. Throws megacut::Error with NVRTC's log, prefixed by `what` (which region),
// when compilation fails.
CompiledKernel compile_region_kernel(const std::string& source, int arch, const std::string& what);

// Where the cache lives ("" when there is none).
std::string kernel_cache_dir();

}  // namespace megacut::executor
