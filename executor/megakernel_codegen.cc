#include "executor/megakernel_codegen.h"

#include <nvrtc.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "executor/op_support.h"
#include "model/error.h"
#include "model/output_file.h"

#ifndef MEGACUT_SOURCE_DIR
#error "MEGACUT_SOURCE_DIR must name the repository root (the tile headers' include root)"
#endif
#ifndef MEGACUT_CUDA_INCLUDE
#error "MEGACUT_CUDA_INCLUDE must name the CUDA toolkit's include directory"
#endif

namespace megacut::executor {
namespace {

namespace fs = std::filesystem;

// Headers the generated source reaches outside executor/tiles/ (all of which it may reach):
// their text is part of the cache key, so editing a tile body recompiles its regions.
constexpr std::array kRuntimeHeaders = {
    "executor/counters.cuh",       "executor/grid_dependency.cuh",
    "executor/megakernel_abi.cuh", "executor/megakernel_runtime.cuh",
    "executor/tile_sync.cuh",      "executor/tile_sync_abi.h"};

constexpr std::array kBodyHeaders = {
    "argmax", "attention", "audio_elementwise", "codebook_sum", "conv", "embedding", "kv_append",
    "linear", "qk_norm",   "residual_add",      "rmsnorm",      "rope", "silu_mul"};

// NVRTC has no C++ standard library: counters.cuh's <cstdint> comes from here.
constexpr const char* kCstdintName = "cstdint";
constexpr const char* kCstdint = R"(#pragma once
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
namespace std {
using ::int16_t;
using ::int32_t;
using ::int64_t;
using ::int8_t;
using ::uint16_t;
using ::uint32_t;
using ::uint64_t;
using ::uint8_t;
}  // namespace std
)";

std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

std::string source_root() { return env_or("MEGACUT_SOURCE_DIR", MEGACUT_SOURCE_DIR); }

uint64_t fnv1a(uint64_t h, std::string_view text) {
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot read (needed to compile megakernel regions)");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string hex(uint64_t h) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

}  // namespace

PtxasReport parse_ptxas_report(const std::string& log, const std::string& kernel) {
  PtxasReport r;
  // "Compiling entry function 'K' ...", then "Function properties for K", a line of stack frame
  // and spills, and "Used N registers, ..." (the kernel's, up to the next entry function).
  const size_t entry = log.find("Compiling entry function '" + kernel + "'");
  if (entry == std::string::npos) return r;
  const size_t next = log.find("Compiling entry function", entry + 1);
  const std::string block =
      log.substr(entry, next == std::string::npos ? std::string::npos : next - entry);
  // The integer whose digits end at `at` in `block`, or -1 where there are none (or they make
  // no int: a damaged log).
  auto int_ending_at = [&](size_t at) {
    size_t begin = at;
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(block[begin - 1]))) --begin;
    int value = 0;
    if (begin == at ||
        std::from_chars(block.data() + begin, block.data() + at, value).ec != std::errc()) {
      return -1;
    }
    return value;
  };
  // The integer just before `label` in `block`, or -1.
  auto number_before = [&](const std::string& label) {
    const size_t at = block.find(label);
    return at == std::string::npos ? -1 : int_ending_at(at);
  };
  // The sum of the integers before each `label` in `block`, or -1 where there is none (or one is
  // missing, or the sum is no int: a damaged log). The block holds the kernel's line and those
  // of the functions ptxas kept apart from it rather than inline, which it lists after its entry
  // functions: all of them the kernel's where, as in a region's program, it is the only one.
  auto sum_before = [&](const std::string& label) {
    long long sum = -1;
    for (size_t at = block.find(label); at != std::string::npos; at = block.find(label, at + 1)) {
      const int value = int_ending_at(at);
      if (value < 0) return -1;
      sum = (sum < 0 ? 0 : sum) + value;
      if (sum > INT_MAX) return -1;
    }
    return static_cast<int>(sum);
  };
  r.registers = number_before(" registers");
  // With its callees' frames where ptxas kept a function apart (a call from the kernel).
  r.stack_bytes = number_before(" bytes cumulative stack size");
  if (r.stack_bytes < 0) r.stack_bytes = number_before(" bytes stack frame");
  r.spill_store_bytes = sum_before(" bytes spill stores");
  r.spill_load_bytes = sum_before(" bytes spill loads");
  return r;
}

long long cubin_code_bytes(const std::vector<char>& cubin) {
  // Little-endian ELF64: the section headers at e_shoff (e_shnum of e_shentsize bytes), names in
  // the string table section e_shstrndx; a section header's name offset at 0, its size at 32.
  auto read = [&](size_t at, size_t bytes) -> long long {
    if (at > cubin.size() || bytes > cubin.size() - at) return -1;
    unsigned long long v = 0;
    for (size_t i = 0; i < bytes; ++i) {
      v |= static_cast<unsigned long long>(static_cast<unsigned char>(cubin[at + i])) << (8 * i);
    }
    return v > static_cast<unsigned long long>(LLONG_MAX) ? -1 : static_cast<long long>(v);
  };
  if (cubin.size() < 64 || cubin[0] != 0x7f || cubin[1] != 'E' || cubin[2] != 'L' ||
      cubin[3] != 'F' || cubin[4] != 2 || cubin[5] != 1) {
    return -1;
  }
  const long long shoff = read(0x28, 8), shentsize = read(0x3a, 2), shnum = read(0x3c, 2),
                  shstrndx = read(0x3e, 2);
  if (shoff < 0 || static_cast<unsigned long long>(shoff) > cubin.size() || shentsize < 64 ||
      shnum <= 0 || shstrndx < 0 || shstrndx >= shnum) {
    return -1;  // past the file: no section header can be read (and no offset overflows)
  }
  auto header = [&](long long i) { return static_cast<size_t>(shoff + i * shentsize); };
  const long long names = read(header(shstrndx) + 24, 8),
                  names_size = read(header(shstrndx) + 32, 8);
  if (names < 0 || names_size < 0 || static_cast<unsigned long long>(names) > cubin.size() ||
      static_cast<unsigned long long>(names_size) > cubin.size() - static_cast<size_t>(names)) {
    return -1;
  }
  const std::string text = ".text.";
  long long total = 0;
  bool any = false;
  for (long long i = 0; i < shnum; ++i) {
    const long long name = read(header(i), 4), size = read(header(i) + 32, 8);
    if (name < 0 || size < 0) return -1;  // a section header past the file
    if (name + static_cast<long long>(text.size()) >= names_size) continue;
    if (text.compare(0, text.size(), cubin.data() + names + name, text.size()) != 0) continue;
    if (size > LLONG_MAX - total) return -1;
    total += size;
    any = true;
  }
  return any ? total : -1;
}

std::vector<std::string> region_body_names(const model::Graph& graph, int op_begin, int op_end) {
  std::vector<std::string> names;
  for (int op = op_begin; op < op_end; ++op) names.push_back(tile_body_name(graph, op));
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::string region_kernel_source(const std::vector<std::string>& bodies, bool timing) {
  std::ostringstream s;
  s << "// Generated by megacut (executor/megakernel_codegen.cc): one persistent region kernel.\n";
  if (timing) s << "#define MEGACUT_MK_TIMING 1\n";
  for (const char* h : kRuntimeHeaders) s << "#include \"" << h << "\"\n";
  for (const char* h : kBodyHeaders) s << "#include \"executor/tiles/" << h << ".cuh\"\n";
  auto body_list = [&] {
    std::string list;
    for (size_t k = 0; k < bodies.size(); ++k) list += (k ? ", " : "") + bodies[k];
    return list;
  };
  // One switch case per body: `statement` with the body's type for BODY.
  auto cases = [&](const std::string& statement) {
    for (size_t k = 0; k < bodies.size(); ++k) {
      std::string text = statement;
      text.replace(text.find("BODY"), 4, bodies[k]);
      s << "      case " << k << ":\n        " << text << "\n";
    }
  };
  s << R"(
namespace megacut_region {
using namespace megacut::executor;

// The region's bodies for mk::run_region (executor/megakernel_runtime.cuh).
struct Region {
)";
  s << "  static constexpr int kConsumerThreads = mk::max_threads<" << body_list() << ">();\n";
  s << "  static constexpr bool kStreams = mk::any_streamed<" << body_list() << ">();\n";
  s << R"(  static constexpr int kBlockThreads =
      kConsumerThreads + (kStreams ? megacut::tiles::kRegionProducerThreads : 0);
  static_assert(!kStreams || kConsumerThreads == megacut::tiles::kStreamConsumerThreads,
                "streamed bodies fill the consumer block");

  __device__ static megacut::tiles::StreamPlan stream(const mk::Params& p, const mk::Task& task) {
    const char* layout = p.layouts + task.layout_offset;
    switch (task.body) {
)";
  cases("return mk::body_stream<BODY>(layout, task.tile, p.layouts + task.map_offset);");
  s << R"(    }
    return {};
  }

  __device__ static void run(const mk::Params& p, const char* layout, const mk::Task& task,
                             char* smem, megacut::tiles::StreamCursor& weights) {
    const char* maps = p.layouts + task.map_offset;
    switch (task.body) {
)";
  cases("mk::body_run<BODY>(layout, task.tile, smem, weights, maps);\n        break;");
  s << R"(    }
  }
};

}  // namespace megacut_region

// The block is the consumers (as wide as the widest body) and, with streamed bodies, the
// producer's warpgroup; the launch bounds follow it (and set the registers every warp starts
// with, which run_region then moves from the producer's warpgroup to the consumers').
extern "C" __global__ void __launch_bounds__(megacut_region::Region::kBlockThreads, 1)
    megacut_region_kernel(const megacut::executor::mk::Params p) {
  megacut::executor::mk::run_region<megacut_region::Region>(p);
}
)";
  return s.str();
}

std::string kernel_cache_dir() {
  if (const char* dir = std::getenv("MEGACUT_CACHE_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return (fs::path(home) / ".cache" / "megacut" / "kernels").string();
  }
  return {};
}

CompiledKernel compile_region_kernel(const std::string& source, int arch, const std::string& what) {
  const std::string root = source_root();
  const std::string cuda_include = env_or("MEGACUT_CUDA_INCLUDE", MEGACUT_CUDA_INCLUDE);
  // The conventional kernels' nvcc flags, as far as arithmetic goes: no --use_fast_math, so
  // NVRTC's defaults (-fmad=true, IEEE division and square root, no flush to zero) match.
  // -lineinfo maps the binary back to source lines for compute-sanitizer and Nsight Compute;
  // it changes no instruction.
  // sm_90a on Hopper: its register reallocation (setmaxnreg) lets the consumers of a region with
  // a producer warpgroup keep 224 registers.
  const std::string target = "sm_" + std::to_string(arch) + (arch == 90 ? "a" : "");
  // ptxas -v: its report (registers, spills) comes back in the log, kept beside the cubin.
  const std::vector<std::string> options = {
      "--gpu-architecture=" + target, "-std=c++20", "-lineinfo",
      "--ptxas-options=-v",           "-I" + root,  "-I" + cuda_include};
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  uint64_t h = 0xcbf29ce484222325ull;
  h = fnv1a(h, source);
  h = fnv1a(h, kCstdint);
  for (const std::string& o : options) h = fnv1a(h, o + "\n");
  h = fnv1a(h, "nvrtc " + std::to_string(major) + "." + std::to_string(minor));
  std::vector<fs::path> headers;
  for (const char* header : kRuntimeHeaders) headers.push_back(fs::path(root) / header);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(root) / "executor" / "tiles", ec)) {
    headers.push_back(entry.path());
  }
  if (ec) throw Error(root + "/executor/tiles: cannot list (needed to compile megakernel regions)");
  std::sort(headers.begin(), headers.end());
  for (const fs::path& header : headers) {
    h = fnv1a(h, header.filename().string());
    h = fnv1a(h, read_text(header));
  }

  CompiledKernel k;
  k.key = hex(h);
  const std::string dir = kernel_cache_dir();
  const fs::path cached = dir.empty() ? fs::path() : fs::path(dir) / (k.key + ".cubin");
  const fs::path cached_log = dir.empty() ? fs::path() : fs::path(dir) / (k.key + ".log");
  if (!dir.empty()) {
    std::ifstream in(cached, std::ios::binary);
    if (in) {
      k.cubin.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      if (!k.cubin.empty()) {
        k.cache_hit = true;
        // The report is as optional as the cache: a log it cannot read leaves it unknown.
        std::ifstream log_in(cached_log, std::ios::binary);
        if (log_in) {
          std::ostringstream log;
          log << log_in.rdbuf();
          k.ptxas = parse_ptxas_report(log.str(), kRegionKernelName);
        }
        return k;
      }
    }
  }

  const auto t0 = std::chrono::steady_clock::now();
  nvrtcProgram program = nullptr;
  // Named as a file of the include root: NVRTC looks for the source's quoted includes beside it
  // first, and a bare name would put that in the working directory, whose executor/ headers
  // (another checkout's) would then shadow the root's.
  const std::string name = (fs::path(root) / "megacut_region.cu").string();
  if (nvrtcCreateProgram(&program, source.c_str(), name.c_str(), 1, &kCstdint, &kCstdintName) !=
      NVRTC_SUCCESS) {
    throw Error(what + ": nvrtcCreateProgram failed");
  }
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  const nvrtcResult result =
      nvrtcCompileProgram(program, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(program, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 0) nvrtcGetProgramLog(program, log.data());
  while (!log.empty() && log.back() == '\0') log.pop_back();
  if (result != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&program);
    throw Error(what + ": NVRTC failed (" + nvrtcGetErrorString(result) + "):\n" + log);
  }
  size_t cubin_size = 0;
  nvrtcGetCUBINSize(program, &cubin_size);
  k.cubin.resize(cubin_size);
  nvrtcGetCUBIN(program, k.cubin.data());
  nvrtcDestroyProgram(&program);
  k.ptxas = parse_ptxas_report(log, kRegionKernelName);
  k.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  if (!dir.empty()) {
    // Whole or not at all: concurrent processes never read half a file. The cache is an
    // optimization: a kernel it cannot keep is compiled again next time.
    std::error_code ec;
    fs::create_directories(dir, ec);
    try {
      // The log first: a cubin found in the cache has its report beside it, where it was kept.
      model::write_text_file(cached_log, log);
      model::write_file(cached, [&](std::ostream& out) {
        out.write(k.cubin.data(), static_cast<std::streamsize>(k.cubin.size()));
      });
    } catch (const Error&) {
    }
  }
  return k;
}

}  // namespace megacut::executor
