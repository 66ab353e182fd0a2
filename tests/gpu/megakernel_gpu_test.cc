// Persistent megakernel regions. Host-only (run everywhere): the deadlock check accepts every
// make_schedule table and rejects planted bad ones; a region's generated kernel compiles with
// NVRTC and lands in the cache, waits for the kernel before it first, and no body of the
// bundled models needs a block wider than 256 threads. GPU: random compositions compute what
// all-conventional computes, a planted hang ends in a watchdog error (not a GPU hang), and
// CUDA-graph replays stay correct without resetting counters.
//
// Tolerance: regions run the very tile bodies, compiled by the same NVVM with the same
// arithmetic flags, on the same tiles in the same per-tile order, so logits are expected
// bitwise equal; register allocation in the larger kernel may in principle change FMA
// contraction, so rows are held to a relative L2 error of 5e-3 and the bitwise count and the
// largest error are printed. Greedy tokens must be equal where logits are bitwise equal.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "executor/megakernel.h"
#include "executor/megakernel_bodies.h"
#include "executor/megakernel_codegen.h"
#include "executor/megakernel_schedule.h"
#include "executor/op_support.h"
#include "executor/runner.h"
#include "executor/tile_region.h"
#include "gpu_support.h"
#include "model/config.h"
#include "model/decoder.h"
#include "model/error.h"
#include "model/random_composition.h"
#include "model/schedule.h"
#include "op_cases.h"

namespace megacut::executor {
namespace {

using megacut::testing::rel_l2;

// ---- Host only ----------------------------------------------------------------------------

model::Graph stage_graph(const char* name, int64_t batch, int64_t prompt, const char* stage) {
  const model::ModelSpec spec = model::load_model(name);
  return model::build_graph(spec, model::make_scenario(spec, batch, prompt), stage);
}

TEST(MegakernelSchedule, DeadlockCheckAcceptsEveryMakeSchedule) {
  std::mt19937 rng(7);
  int checked = 0;
  for (const char* name : {"tiny-llama", "tiny-qwen3"}) {
    for (int64_t batch : {1, 8}) {
      for (const char* stage : {"prefill", "decode"}) {
        const model::Graph g = stage_graph(name, batch, 16, stage);
        for (int i = 0; i < 20; ++i) {
          int a = std::uniform_int_distribution<int>(0, g.op_count() - 1)(rng);
          int b = std::uniform_int_distribution<int>(a + 1, g.op_count())(rng);
          if (i == 0) a = 0, b = g.op_count();
          for (int queues : {1, 5, 132}) {
            const TaskTable t = make_task_table(g, model::make_schedule(g, a, b, queues));
            EXPECT_EQ(find_deadlock(t), "") << name << " " << stage << " [" << a << ", " << b
                                            << ") over " << queues << " queues";
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 2 * 2 * 2 * 20 * 3);
}

// A table whose first task of queue 0 waits for the last task of queue 0.
TaskTable waits_on_later_in_own_queue(TaskTable t) {
  const int first = t.queue_begin[0], last = t.queue_begin[1] - 1;
  EXPECT_LT(first, last);
  t.tasks[first].dep_begin = static_cast<int>(t.deps.size());
  t.deps.push_back({t.tasks[last].index, 1});
  t.tasks[first].dep_end = static_cast<int>(t.deps.size());
  return t;
}

TEST(MegakernelSchedule, DeadlockCheckRejectsPlantedTables) {
  const model::Graph g = stage_graph("tiny-llama", 8, 16, "prefill");
  const TaskTable good = make_task_table(g, model::make_schedule(g, 1, 6, 3));
  ASSERT_EQ(find_deadlock(good), "");

  EXPECT_NE(find_deadlock(waits_on_later_in_own_queue(good)).find("not an earlier task"),
            std::string::npos);

  // Waits for op counts: of the task's own op (whose tasks do not all come before it), and of an
  // earlier op with a count that is not its tasks'.
  const int last = good.queue_begin[1] - 1;
  auto waits_for_count = [&](int op, int count) {
    TaskTable t = good;
    t.tasks[last].dep_begin = static_cast<int>(t.deps.size());
    t.deps.push_back({t.task_count + (op - t.op_begin), count});
    t.tasks[last].dep_end = static_cast<int>(t.deps.size());
    return t;
  };
  const int own = good.op_of_task[good.tasks[last].index];
  ASSERT_GT(own, good.op_begin);
  const int tiles = static_cast<int>(g.op(own).tiling.count());
  EXPECT_NE(find_deadlock(waits_for_count(own, tiles)).find("is not an earlier task"),
            std::string::npos);
  EXPECT_NE(find_deadlock(waits_for_count(good.op_begin, 1000)).find("to count 1000 tasks"),
            std::string::npos);
  TaskTable wrong_op = good;
  wrong_op.tasks[0].op_counter += 1;
  EXPECT_NE(find_deadlock(wrong_op).find("count of another op"), std::string::npos);

  TaskTable reversed = good;  // a queue run backwards
  std::reverse(reversed.tasks.begin() + reversed.queue_begin[0],
               reversed.tasks.begin() + reversed.queue_begin[1]);
  EXPECT_NE(find_deadlock(reversed).find("comes before it in task order"), std::string::npos);

  TaskTable dropped = good;  // a task no queue runs: its counter is never signalled
  dropped.tasks.erase(dropped.tasks.begin() + dropped.queue_begin[1] - 1);
  for (size_t q = 1; q < dropped.queue_begin.size(); ++q) --dropped.queue_begin[q];
  EXPECT_NE(find_deadlock(dropped).find("never signalled"), std::string::npos);
}

TEST(TileRegionTable, DeadlockCheckAcceptsEveryRegion) {
  int checked = 0;
  for (const char* name : {"tiny-llama", "tiny-qwen3", "llama-3.2-1b"}) {
    for (int64_t batch : {1, 8}) {
      for (const char* stage : {"prefill", "decode"}) {
        const model::Graph g = stage_graph(name, batch, 16, stage);
        for (int a = 0; a < g.op_count(); a += 3) {
          for (int b : {a + 1, std::min(a + 5, g.op_count()), g.op_count()}) {
            const TileTable t = make_tile_table(g, a, b);
            EXPECT_EQ(find_tile_deadlock(t), "")
                << name << " " << stage << " [" << a << ", " << b << ")";
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 500);
}

TEST(TileRegionTable, ATileWaitsForWhatItReadsInsideTheRegion) {
  // tiny-llama's decode at batch 1: op 1 is layer 0's fused norm and qkv, which reads all of
  // op 0 (the embedding, one tile per row block); from op 1 on, op 0 is before the region.
  const model::Graph g = stage_graph("tiny-llama", 1, 16, "decode");
  const TileTable whole = make_tile_table(g, 0, g.op_count());
  const TileTable later = make_tile_table(g, 1, g.op_count());
  EXPECT_GT(whole.dep_offsets[1].back(), 0);
  EXPECT_EQ(later.dep_offsets[0].back(), 0);
  EXPECT_EQ(whole.tile_count, g.task_count());
  EXPECT_EQ(later.tile_count, g.task_count() - g.op(0).tiling.count());
}

TEST(TileRegionTable, DeadlockCheckRejectsPlantedTables) {
  const model::Graph g = stage_graph("tiny-llama", 8, 16, "prefill");
  const TileTable good = make_tile_table(g, 1, 6);
  ASSERT_EQ(find_tile_deadlock(good), "");
  auto planted = [&](int slot, mk::Dep dep) {
    TileTable t = good;
    t.deps[slot].insert(t.deps[slot].begin(), dep);
    for (size_t i = 1; i < t.dep_offsets[slot].size(); ++i) ++t.dep_offsets[slot][i];
    return t;
  };
  // Tile 0 of the region's second op waits for a tile of its own op, of a later op, for its
  // own op's count, for an earlier op's count with the wrong tile count, and for a counter of no
  // tile.
  EXPECT_NE(find_tile_deadlock(planted(1, {good.tile_counter[1] + 1, 1}))
                .find("op 2, tile 0 waits for counter"),
            std::string::npos);
  EXPECT_NE(
      find_tile_deadlock(planted(1, {good.tile_counter[3], 1})).find("not a tile of an earlier op"),
      std::string::npos);
  EXPECT_NE(find_tile_deadlock(planted(1, {good.op_counter(2), 1})).find("not an earlier op"),
            std::string::npos);
  EXPECT_NE(find_tile_deadlock(planted(1, {good.op_counter(1), 1000})).find("to count 1000"),
            std::string::npos);
  EXPECT_NE(find_tile_deadlock(planted(1, {good.tile_counter[0], 5})).find("not a tile"),
            std::string::npos);
  // ... and for the region's start counter, which no tile publishes.
  EXPECT_NE(find_tile_deadlock(planted(1, {good.started_counter(), 1})).find("not a tile"),
            std::string::npos);
  TileTable short_offsets = good;
  short_offsets.dep_offsets[2].pop_back();
  EXPECT_NE(find_tile_deadlock(short_offsets).find("no tiles of its own"), std::string::npos);
  TileTable shifted = good;  // counters from 1: counter 0 would be no tile's
  for (int& first : shifted.tile_counter) ++first;
  ++shifted.tile_count;
  EXPECT_NE(find_tile_deadlock(shifted).find("do not start at counter 0"), std::string::npos);
}

TEST(MegakernelCodegen, RegionKernelCompilesWithNvrtcAndIsCached) {
  const std::string cache = ::testing::TempDir() + "megacut_mk_cache_test";
  std::filesystem::remove_all(cache);
  setenv("MEGACUT_CACHE_DIR", cache.c_str(), 1);
  const model::Graph g = stage_graph("tiny-qwen3", 8, 16, "decode");
  const std::vector<std::string> bodies = region_body_names(g, 0, g.op_count());
  EXPECT_GE(bodies.size(), 6u);
  const std::string source = region_kernel_source(bodies, /*timing=*/true);
  const CompiledKernel first = compile_region_kernel(source, 90, "test region");
  EXPECT_FALSE(first.cache_hit);
  EXPECT_GT(first.cubin.size(), 1000u);
  const CompiledKernel second = compile_region_kernel(source, 90, "test region");
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(first.key, second.key);
  EXPECT_EQ(first.cubin, second.cubin);
  // ptxas's report comes with the kernel, compiled or cached.
  EXPECT_TRUE(first.ptxas.known());
  EXPECT_GT(first.ptxas.registers, 0);
  EXPECT_LE(first.ptxas.registers, 255);
  EXPECT_GE(first.ptxas.spill_store_bytes, 0);
  EXPECT_GE(first.ptxas.spill_load_bytes, 0);
  EXPECT_GE(first.ptxas.stack_bytes, 0);
  EXPECT_EQ(second.ptxas.registers, first.ptxas.registers);
  EXPECT_EQ(second.ptxas.spill_store_bytes, first.ptxas.spill_store_bytes);
  EXPECT_EQ(second.ptxas.spill_load_bytes, first.ptxas.spill_load_bytes);
  EXPECT_EQ(second.ptxas.stack_bytes, first.ptxas.stack_bytes);
  // The kernel's machine code, inside the cubin (CodeBytesAreTheTextSections checks the reading).
  const long long code = cubin_code_bytes(first.cubin);
  EXPECT_GT(code, 1000);
  EXPECT_LT(code, static_cast<long long>(first.cubin.size()));
  EXPECT_EQ(code % 16, 0);  // whole instructions
  // A cubin cached without its report still loads; the report is then unknown.
  std::filesystem::remove(std::filesystem::path(cache) / (first.key + ".log"));
  const CompiledKernel third = compile_region_kernel(source, 90, "test region");
  EXPECT_TRUE(third.cache_hit);
  EXPECT_FALSE(third.ptxas.known());
  EXPECT_THROW(compile_region_kernel(source + "\n#error planted\n", 90, "planted region"), Error);
  unsetenv("MEGACUT_CACHE_DIR");
}

// A little-endian ELF64 file of sections (name, size): the header, the section names' string
// table, then the section headers (a null one first, the string table's last). Each section's
// offset is unlike its size, so that reading one for the other shows.
std::vector<char> elf_of(const std::vector<std::pair<std::string, uint64_t>>& sections) {
  std::string names(1, '\0');
  std::vector<uint32_t> name_at;
  for (const auto& s : sections) {
    name_at.push_back(static_cast<uint32_t>(names.size()));
    names += s.first + '\0';
  }
  const uint32_t strtab_name = static_cast<uint32_t>(names.size());
  names += std::string(".shstrtab") + '\0';
  std::vector<char> f(64, 0);
  const char ident[6] = {0x7f, 'E', 'L', 'F', 2, 1};
  std::copy(ident, ident + 6, f.begin());
  f.insert(f.end(), names.begin(), names.end());
  const uint64_t shoff = f.size();
  auto put = [&](size_t at, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) f[at + i] = static_cast<char>(v >> (8 * i) & 0xff);
  };
  auto add_header = [&](uint32_t name, uint64_t offset, uint64_t size) {
    const size_t at = f.size();
    f.resize(at + 64, 0);
    put(at, name, 4);
    put(at + 24, offset, 8);
    put(at + 32, size, 8);
  };
  add_header(0, 0, 0);
  for (size_t i = 0; i < sections.size(); ++i)
    add_header(name_at[i], 0x5000 + i, sections[i].second);
  add_header(strtab_name, 64, names.size());
  put(0x28, shoff, 8);
  put(0x3a, 64, 2);
  put(0x3c, sections.size() + 2, 2);
  put(0x3e, sections.size() + 1, 2);
  return f;
}

TEST(MegakernelCodegen, CodeBytesAreTheTextSections) {
  // The kernel's code and an outlined function's; other sections are not code.
  const std::vector<char> elf = elf_of(
      {{".nv.info", 0x999}, {".text.kernel", 0x120}, {".text.outlined", 0x40}, {".text", 7}});
  EXPECT_EQ(cubin_code_bytes(elf), 0x120 + 0x40);
  EXPECT_EQ(cubin_code_bytes(elf_of({{".nv.info", 0x999}, {".text", 7}})), -1);
  // Not ELF64, too short, section headers or the names past the end of the file.
  EXPECT_EQ(cubin_code_bytes({'n', 'o', 't', ' ', 'e', 'l', 'f'}), -1);
  std::vector<char> elf32 = elf;
  elf32[4] = 1;
  EXPECT_EQ(cubin_code_bytes(elf32), -1);
  EXPECT_EQ(cubin_code_bytes(std::vector<char>(elf.begin(), elf.end() - 30)), -1);
  EXPECT_EQ(cubin_code_bytes(std::vector<char>(elf.begin(), elf.begin() + 70)), -1);
  std::vector<char> long_names = elf;
  long_names[elf.size() - 64 + 32 + 7] = 0x7f;  // the string table's size, past the file
  EXPECT_EQ(cubin_code_bytes(long_names), -1);
}

TEST(MegakernelCodegen, PtxasReportIsTheNamedKernels) {
  const std::string log =
      "ptxas info    : 293 bytes gmem\n"
      "ptxas info    : Compiling entry function 'other' for 'sm_90a'\n"
      "ptxas info    : Function properties for other\n"
      "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 8 bytes cumulative stack size\n"
      "ptxas info    : Compiling entry function 'megacut_region_kernel' for 'sm_90a'\n"
      "ptxas info    : Function properties for megacut_region_kernel\n"
      "ptxas         .     280 bytes stack frame, 256 bytes spill stores, 552 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 16 barriers, 280 bytes cumulative stack size, "
      "4992 bytes smem\n"
      "ptxas info    : Compile time = 886.739 ms\n";
  const PtxasReport r = parse_ptxas_report(log, kRegionKernelName);
  EXPECT_EQ(r.registers, 168);
  EXPECT_EQ(r.stack_bytes, 280);
  EXPECT_EQ(r.spill_store_bytes, 256);
  EXPECT_EQ(r.spill_load_bytes, 552);
  // A function ptxas kept apart from the kernel (not inlined) is listed after it: its spills are
  // the kernel's too, its frame in the kernel's cumulative stack.
  const std::string outlined =
      "ptxas info    : Compiling entry function 'megacut_region_kernel' for 'sm_90a'\n"
      "ptxas info    : Function properties for megacut_region_kernel\n"
      "ptxas         .     152 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 16 barriers, 160 bytes cumulative stack size, "
      "4992 bytes smem\n"
      "ptxas info    : Compile time = 2950.489 ms\n"
      "ptxas info    : Function properties for _ZN7megacut8executor2mk10run_region\n"
      "ptxas         .     8 bytes stack frame, 60 bytes spill stores, 220 bytes spill loads\n";
  const PtxasReport o = parse_ptxas_report(outlined, kRegionKernelName);
  EXPECT_EQ(o.registers, 168);
  EXPECT_EQ(o.stack_bytes, 160);
  EXPECT_EQ(o.spill_store_bytes, 60);
  EXPECT_EQ(o.spill_load_bytes, 220);
  // A report without the cumulative stack: the kernel's frame.
  const PtxasReport frame = parse_ptxas_report(
      "ptxas info    : Compiling entry function 'megacut_region_kernel' for 'sm_90a'\n"
      "ptxas         .     24 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 64 registers\n",
      kRegionKernelName);
  EXPECT_EQ(frame.stack_bytes, 24);
  EXPECT_EQ(frame.spill_store_bytes, 0);
  const PtxasReport other = parse_ptxas_report(log, "other");
  EXPECT_EQ(other.registers, 40);
  EXPECT_EQ(other.spill_store_bytes, 4);
  EXPECT_FALSE(parse_ptxas_report(log, "missing").known());
  EXPECT_FALSE(parse_ptxas_report("", kRegionKernelName).known());
}

// A decode region's waits for flagged words keep a poll round's words and their chunks in
// registers. With the words of chunks not loaded in a round left undefined, ptxas kept them in
// local memory (Qwen3-0.6B's decode region: a 128-byte stack frame, spill loads of 272 bytes, a
// store and a reload on every round of every wait); with the words defined, 40 and 100 bytes,
// and with the chunks' output too, 32 and none. No GPU needed: ptxas's report of the region NVRTC
// compiles.
TEST(MegakernelCodegen, DecodeRegionWaitsKeepTheirWordsInRegisters) {
  const std::string cache = ::testing::TempDir() + "megacut_mk_stack_test";
  std::filesystem::remove_all(cache);
  setenv("MEGACUT_CACHE_DIR", cache.c_str(), 1);
  const model::Graph g = stage_graph("qwen3-0.6b", 1, 128, "decode");
  const CompiledKernel k = compile_region_kernel(
      region_kernel_source(region_body_names(g, 0, g.op_count()), /*timing=*/false), 90,
      "qwen3-0.6b's decode region");
  unsetenv("MEGACUT_CACHE_DIR");
  ASSERT_TRUE(k.ptxas.known());
  EXPECT_LE(k.ptxas.stack_bytes, 32);
  EXPECT_LE(k.ptxas.spill_load_bytes, 16);
}

// A region's block is as wide as its widest body, and its launch bounds cap the registers of
// every body at 65536 / width: no body of the bundled models may be wider than 256 threads.
TEST(MegakernelCodegen, EveryBodyFitsA256ThreadBlock) {
  int checked = 0;
  for (const char* name : {"llama-3.2-1b", "qwen3-0.6b", "tiny-llama", "tiny-qwen3"}) {
    for (int64_t batch : {1, 8, 32}) {
      for (const char* stage : {"prefill", "decode"}) {
        const model::Graph g = stage_graph(name, batch, 128, stage);
        StageBuffers fake;  // layouts only hold the pointers
        fake.tensors.assign(g.tensors().size(), reinterpret_cast<void*>(uintptr_t{1} << 30));
        fake.op_weights.assign(g.op_count(), reinterpret_cast<void*>(uintptr_t{1} << 31));
        for (int op = 0; op < g.op_count(); ++op) {
          const RegionBody body = region_body(g, op, fake);
          EXPECT_LE(body.threads, 256) << name << " batch " << batch << " " << stage << " op "
                                       << g.op(op).name << ": " << body.name;
          EXPECT_LE(body.layout.size(), static_cast<size_t>(mk::kMaxLayoutBytes)) << body.name;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// Launched with Programmatic Dependent Launch, a region must wait for the kernel before it
// before touching anything a kernel writes (its arrival count first, then the counters and its
// bodies' buffers); only the producer warp, which reads the host's tables and weights, may run
// before. Its launch bounds follow its block width.
TEST(MegakernelCodegen, RegionKernelWaitsForPriorGridsFirst) {
  const model::Graph g = stage_graph("tiny-llama", 1, 16, "decode");
  const std::string source = region_kernel_source(region_body_names(g, 0, g.op_count()), false);
  EXPECT_NE(source.find("__launch_bounds__(megacut_region::Region::kBlockThreads, 1)"),
            std::string::npos);
  EXPECT_NE(source.find("mk::run_region<megacut_region::Region>(p)"), std::string::npos);
  std::ifstream in(std::string(MEGACUT_SOURCE_DIR) + "/executor/megakernel_runtime.cuh");
  const std::string runtime((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t tasks = runtime.find("__device__ __forceinline__ void run_tasks(");
  const size_t region = runtime.find("__device__ void run_region(");
  ASSERT_NE(tasks, std::string::npos);
  ASSERT_NE(region, std::string::npos);
  const size_t wait = runtime.find("wait_for_prior_grids();", tasks);
  ASSERT_LT(wait, region);
  EXPECT_LT(wait, runtime.find("p.arrivals", tasks));
  EXPECT_LT(wait, runtime.find("wait_dep(p", tasks));
  EXPECT_LT(wait, runtime.find("Region::run(", tasks));
  // The producer streams from the region's start, the consumers run the tasks, the signaler
  // publishes them.
  EXPECT_NE(runtime.find("produce_queue<Region>(", region), std::string::npos);
  EXPECT_NE(runtime.find("run_tasks<Region, true>(", region), std::string::npos);
  EXPECT_NE(runtime.find("signal_queue(", region), std::string::npos);
}

// ---- GPU ----------------------------------------------------------------------------------

struct ModelCase {
  model::ModelSpec spec;
  model::Scenario scenario;
  std::vector<model::Graph> graphs;  // by stage
};

ModelCase model_case(const char* name, int64_t batch, int64_t prompt) {
  ModelCase c{model::load_model(name), {}, {}};
  c.scenario = model::make_scenario(c.spec, batch, prompt);
  for (const std::string& s : c.scenario.stage_names()) {
    c.graphs.push_back(model::build_graph(c.spec, c.scenario, s));
  }
  return c;
}

model::Composition random_composition(const ModelCase& c, std::mt19937& rng) {
  std::vector<const model::Graph*> stages;
  for (const model::Graph& g : c.graphs) stages.push_back(&g);
  return model::random_composition(stages, rng);
}

// Compiles every region kernel the compositions need, in parallel, into the cache: the runners
// then only load cubins.
void precompile(const std::vector<std::pair<const ModelCase*, model::Composition>>& runs) {
  std::set<std::string> sources;
  for (const auto& [c, comp] : runs) {
    for (size_t s = 0; s < c->graphs.size(); ++s) {
      for (const model::Region& r : comp.stages[s].regions) {
        if (r.kind != model::RegionKind::mk) continue;
        sources.insert(
            region_kernel_source(region_body_names(c->graphs[s], r.begin, r.end), false));
      }
    }
  }
  int device = 0, major = 0, minor = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  const std::vector<std::string> list(sources.begin(), sources.end());
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < list.size(); i = next++) {
        compile_region_kernel(list[i], major * 10 + minor, "precompiled region");
      }
    });
  }
  for (std::thread& t : pool) t.join();
  std::printf("%zu distinct region kernels for %zu compositions\n", list.size(), runs.size());
}

// See the header: expected 0 (bitwise); 5e-3 leaves room for a different FMA contraction in
// the larger kernel, still 4x tighter than the conventional run's limit against float64.
constexpr double kRelL2Limit = 5e-3;

// Largest row error any comparison saw, printed with the bitwise count.
double g_max_rel_l2 = 0;

// Row by row within kRelL2Limit; returns whether bitwise equal.
bool expect_same_logits(const std::vector<float>& got, const std::vector<float>& want,
                        int64_t vocab, const std::string& what) {
  EXPECT_EQ(got.size(), want.size()) << what;
  if (got.size() != want.size()) return false;
  for (size_t row = 0; row * vocab < got.size(); ++row) {
    const double err = rel_l2(got, want, row * vocab, vocab);
    g_max_rel_l2 = std::max(g_max_rel_l2, err);
    EXPECT_LE(err, kRelL2Limit) << what << ", row " << row;
  }
  return std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0;
}

// Greedy generation through each composition against the all-conventional run of the same
// model (runs of one model case next to each other).
void check_runs(const std::vector<std::pair<const ModelCase*, model::Composition>>& runs, int steps,
                uint64_t seed) {
  precompile(runs);
  int bitwise = 0, compared = 0;
  const ModelCase* current = nullptr;
  std::unique_ptr<HostWeights> weights;
  std::unique_ptr<ScenarioRunner> runner;  // one per model case: weights uploaded once
  std::vector<float> want_prefill, want_decode;
  std::vector<int32_t> want_tokens;
  for (const auto& [c, comp] : runs) {
    if (c != current) {
      if (!current || current->spec.name != c->spec.name) {
        runner.reset();
        weights = std::make_unique<HostWeights>(HostWeights::random(c->spec, seed));
      }
      RunOptions options;
      options.decode_steps = steps;
      runner = std::make_unique<ScenarioRunner>(c->spec, c->scenario, *weights, options);
      runner->generate(steps);  // all conventional
      want_prefill = runner->prefill_logits();
      want_decode = runner->decode_logits();
      want_tokens = runner->decode_tokens();
      current = c;
    }
    runner->set_composition(comp);
    runner->generate(steps);
    const std::string what =
        c->spec.name + " batch " + std::to_string(c->scenario.batch) + ": " + comp.to_string();
    const int64_t vocab = c->spec.decoder.vocab_size;
    const bool same_prefill =
        expect_same_logits(runner->prefill_logits(), want_prefill, vocab, what + " (prefill)");
    const bool same_decode =
        expect_same_logits(runner->decode_logits(), want_decode, vocab, what + " (decode)");
    const bool same = same_prefill && same_decode;
    if (same) {
      EXPECT_EQ(runner->decode_tokens(), want_tokens) << what;
    }
    bitwise += same;
    ++compared;
  }
  std::printf("%d of %d compositions bitwise equal to all-conventional; largest row error %.3g\n",
              bitwise, compared, g_max_rel_l2);
}

void check_compositions(const std::vector<ModelCase>& cases, int per_case, int steps,
                        uint64_t seed) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::vector<std::pair<const ModelCase*, model::Composition>> runs;
  for (const ModelCase& c : cases) {
    for (int i = 0; i < per_case; ++i) runs.emplace_back(&c, random_composition(c, rng));
  }
  check_runs(runs, steps, seed);
}

// Per case: every stage one tile region, then random compositions with their conv regions
// turned into tile regions (beside mk regions).
void check_tile_compositions(const std::vector<ModelCase>& cases, int per_case, int steps,
                             uint64_t seed) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::vector<std::pair<const ModelCase*, model::Composition>> runs;
  for (const ModelCase& c : cases) {
    model::Composition all;
    for (const model::Graph& g : c.graphs) {
      all.stages.push_back({g.stage(), {{model::RegionKind::tile, 0, g.op_count()}}});
    }
    runs.emplace_back(&c, all);
    for (int i = 0; i < per_case; ++i) {
      model::Composition comp = random_composition(c, rng);
      for (model::StageRegions& s : comp.stages) {
        for (model::Region& r : s.regions) {
          if (r.kind == model::RegionKind::conv) r.kind = model::RegionKind::tile;
        }
      }
      runs.emplace_back(&c, comp);
    }
  }
  check_runs(runs, steps, seed);
}

TEST(MegakernelGpu, RandomTinyCompositionsMatchConventional) {
  MEGACUT_REQUIRE_GPU();
  std::vector<ModelCase> cases;
  for (const char* name : {"tiny-llama", "tiny-qwen3"}) {
    for (int64_t batch : {1, 8}) cases.push_back(model_case(name, batch, 16));
  }
  check_compositions(cases, 13, 2, 11);  // 52 compositions
}

TEST(MegakernelGpu, RandomLlama1bCompositionsMatchConventional) {
  MEGACUT_REQUIRE_GPU();
  std::vector<ModelCase> cases;
  for (int64_t batch : {1, 8}) cases.push_back(model_case("llama-3.2-1b", batch, 16));
  check_compositions(cases, 10, 1, 5);  // 20 compositions
}

TEST(TileRegionGpu, TinyCompositionsMatchConventional) {
  MEGACUT_REQUIRE_GPU();
  std::vector<ModelCase> cases;
  for (const char* name : {"tiny-llama", "tiny-qwen3"}) {
    for (int64_t batch : {1, 8}) cases.push_back(model_case(name, batch, 16));
  }
  check_tile_compositions(cases, 6, 2, 23);  // 28 compositions
}

TEST(TileRegionGpu, Llama1bCompositionsMatchConventional) {
  MEGACUT_REQUIRE_GPU();
  std::vector<ModelCase> cases;
  for (int64_t batch : {1, 8}) cases.push_back(model_case("llama-3.2-1b", batch, 16));
  check_tile_compositions(cases, 4, 1, 29);  // 10 compositions
}

// Each mk region of random Llama-3.2-1B compositions alone, the rest of the model conventional,
// three runs each: a region that breaks bitwise equality shows by its ops, and a race by a
// result that moves from run to run.
TEST(MegakernelGpu, Llama1bRegionsAloneMatchConventional) {
  MEGACUT_REQUIRE_GPU();
  const ModelCase c = model_case("llama-3.2-1b", 1, 16);
  std::mt19937 rng(5);
  std::vector<std::pair<const ModelCase*, model::Composition>> runs;
  for (int i = 0; i < 10; ++i) {
    const model::Composition comp = random_composition(c, rng);
    for (size_t s = 0; s < comp.stages.size(); ++s) {
      const int ops = c.graphs[s].op_count();
      for (const model::Region& r : comp.stages[s].regions) {
        if (r.kind != model::RegionKind::mk) continue;
        model::Composition alone;
        for (size_t t = 0; t < comp.stages.size(); ++t) {
          std::vector<model::Region> regions;
          if (t != s) {
            regions.push_back({model::RegionKind::conv, 0, c.graphs[t].op_count()});
          } else {
            if (r.begin > 0) regions.push_back({model::RegionKind::conv, 0, r.begin});
            regions.push_back(r);
            if (r.end < ops) regions.push_back({model::RegionKind::conv, r.end, ops});
          }
          alone.stages.push_back({c.graphs[t].stage(), regions});
        }
        runs.emplace_back(&c, alone);
      }
    }
  }
  precompile(runs);
  const HostWeights weights = HostWeights::random(c.spec, 5);
  RunOptions options;
  ScenarioRunner runner(c.spec, c.scenario, weights, options);
  runner.generate(1);
  const std::vector<float> want_prefill = runner.prefill_logits();
  const std::vector<float> want_decode = runner.decode_logits();
  const int64_t vocab = c.spec.decoder.vocab_size;
  int bitwise = 0;
  for (const auto& [model_case, comp] : runs) {
    runner.set_composition(comp);
    for (int run = 0; run < 3; ++run) {
      runner.generate(1);
      const std::string what = comp.to_string() + ", run " + std::to_string(run);
      const bool same =
          expect_same_logits(runner.prefill_logits(), want_prefill, vocab, what + " (prefill)") &&
          expect_same_logits(runner.decode_logits(), want_decode, vocab, what + " (decode)");
      bitwise += same;
      if (!same) {
        std::printf("not bitwise: %s: prefill %.3g, decode %.3g\n", what.c_str(),
                    rel_l2(runner.prefill_logits(), want_prefill, 0, vocab),
                    rel_l2(runner.decode_logits(), want_decode, 0, vocab));
      }
    }
  }
  std::printf("%d of %zu runs of single regions bitwise equal to all-conventional\n", bitwise,
              3 * runs.size());
  EXPECT_EQ(bitwise, static_cast<int>(3 * runs.size()));
}

// Where a region and all-conventional part: the first op of `graph` whose output differs from
// `want` (the conventional run's outputs, op by op), and how: which of its tiles, and within the
// first such tile which (row, col) differ. Empty when every op's output is equal.
std::string first_difference(ScenarioRunner& runner, int stage, const model::Graph& graph,
                             const std::vector<std::vector<std::byte>>& want) {
  for (int index = 0; index < graph.op_count(); ++index) {
    const model::Op& op = graph.op(index);
    const std::vector<std::byte> got = runner.tensor_bytes(stage, op.output);
    if (got == want[index]) continue;
    const model::Tensor& out = graph.tensor(op.output);
    const int64_t cols = out.shape.back();
    const int64_t element = model::dtype_bytes(out.dtype);
    std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> tiles;  // tile: (row, col)
    for (int64_t e = 0; e * element < static_cast<int64_t>(got.size()); ++e) {
      if (std::memcmp(got.data() + e * element, want[index].data() + e * element,
                      static_cast<size_t>(element)) != 0) {
        const int64_t row = e / cols, col = e % cols;
        const int64_t tile =
            row < op.tiling.rows
                ? row / op.tiling.tile_rows * op.tiling.col_tiles() + col / op.tiling.tile_cols
                : -1;
        tiles[tile].emplace_back(row, col);
      }
    }
    std::string text = "op " + std::to_string(index) + " " + op.name + " (" +
                       std::string(op.kind->name()) + "), tiles";
    for (const auto& [tile, where] : tiles) {
      text += " " + std::to_string(tile) + " (" + std::to_string(where.size()) + ")";
    }
    text += " of " + std::to_string(op.tiling.count()) + "; in the first, (row, col):";
    int shown = 0;
    for (const auto& [row, col] : tiles.begin()->second) {
      if (++shown > 40) break;
      text += " " + std::to_string(row) + "," + std::to_string(col);
    }
    return text;
  }
  return {};
}

// A decode stage as one mk region hands its ops' x over as flagged words where an op of the
// region wrote it (tiles/flagged.cuh): a layer's linears and attention. Graph replays, each reading
// what the one before left (the token), so that each run's words must not pass for the next one's:
// bitwise the conventional run's logits, with the words and with every hop through counters
// (RunOptions::counter_hops), which hands over none.
TEST(MegakernelGpu, DecodeRegionsHandOverFlaggedWords) {
  MEGACUT_REQUIRE_GPU();
  for (const ModelCase& c : {model_case("tiny-llama", 1, 16), model_case("tiny-qwen3", 8, 16),
                             model_case("llama-3.2-1b", 1, 16)}) {
    const HostWeights weights = HostWeights::random(c.spec, 3);
    RunOptions options;
    options.warmup = 0;
    options.runs = 1;
    model::Composition decode_mk;
    for (const model::Graph& g : c.graphs) {
      const bool mk = g.stage() == "decode";
      decode_mk.stages.push_back(
          {g.stage(), {{mk ? model::RegionKind::mk : model::RegionKind::conv, 0, g.op_count()}}});
    }
    for (const bool counters : {false, true}) {
      ScenarioRunner conv(c.spec, c.scenario, weights, options);
      RunOptions o = options;
      o.composition = decode_mk;
      o.counter_hops = counters;
      ScenarioRunner runner(c.spec, c.scenario, weights, o);
      const std::string what = c.spec.name + " batch " + std::to_string(c.scenario.batch) +
                               (counters ? ", counters only" : ", flagged words");
      bool bitwise = true;
      for (int replay = 0; replay < 4; ++replay) {
        for (int stage = 0; stage < conv.stage_count(); ++stage) {
          conv.time_replay_ms(stage);
          runner.time_replay_ms(stage);
          bitwise = expect_same_logits(runner.stage_logits(stage), conv.stage_logits(stage),
                                       c.spec.decoder.vocab_size,
                                       what + ", replay " + std::to_string(replay) + ", stage " +
                                           std::to_string(stage)) &&
                    bitwise;
        }
      }
      EXPECT_TRUE(bitwise) << what << ": not bitwise the conventional run's";
      int flagged = 0;
      for (int s = 0; s < runner.stage_count(); ++s) {
        for (const MegakernelRegion* r : runner.mk_regions(s))
          flagged += r->config().flagged_inputs;
      }
      if (counters) {
        EXPECT_EQ(flagged, 0) << what;
      } else {
        EXPECT_GT(flagged, 0) << what;
      }
      std::printf("%s: %d inputs handed over as flagged words\n", what.c_str(), flagged);
    }
  }
}

// Llama-3.2-1B's prefill (16 rows: streamed linears, multi-row attention) with mk regions, ten
// runs each, op by op against all-conventional: a race shows as the first op whose output moves
// from run to run, and where in it.
TEST(MegakernelGpu, Llama1bPrefillRegionsMatchOpByOp) {
  MEGACUT_REQUIRE_GPU();
  const ModelCase c = model_case("llama-3.2-1b", 1, 16);
  const model::Graph& prefill = c.graphs[0];
  ASSERT_EQ(prefill.stage(), "prefill");
  std::vector<model::StageShape> shapes;
  for (const model::Graph& g : c.graphs) shapes.push_back({g.stage(), g.op_count()});
  const int ops = prefill.op_count();
  const std::string decode = "; decode: conv[0:" + std::to_string(c.graphs[1].op_count()) + "]";
  const auto cut = [&](const std::string& prefill_regions) {
    return model::parse_composition("prefill: " + prefill_regions + decode, shapes);
  };
  // The whole prefill but its head; one layer's MLP; two layers.
  const std::vector<model::Composition> comps = {
      cut("mk[0:" + std::to_string(ops - 3) + "] conv[" + std::to_string(ops - 3) + ":" +
          std::to_string(ops) + "]"),
      cut("conv[0:9] mk[9:12] conv[12:" + std::to_string(ops) + "]"),
      cut("conv[0:1] mk[1:25] conv[25:" + std::to_string(ops) + "]")};
  std::vector<std::pair<const ModelCase*, model::Composition>> runs;
  for (const model::Composition& comp : comps) runs.emplace_back(&c, comp);
  precompile(runs);
  const HostWeights weights = HostWeights::random(c.spec, 5);
  ScenarioRunner runner(c.spec, c.scenario, weights, RunOptions{});
  runner.generate(1);
  std::vector<std::vector<std::byte>> want;
  for (int op = 0; op < ops; ++op) want.push_back(runner.tensor_bytes(0, prefill.op(op).output));
  for (const model::Composition& comp : comps) {
    runner.set_composition(comp);
    int equal = 0;
    for (int run = 0; run < 10; ++run) {
      runner.generate(1);
      const std::string difference = first_difference(runner, 0, prefill, want);
      equal += difference.empty();
      if (!difference.empty())
        ADD_FAILURE() << comp.to_string() << ", run " << run << ": " << difference;
    }
    std::printf("%d of 10 runs of %s equal op by op\n", equal, comp.to_string().c_str());
  }
}

TEST(MegakernelGpu, GraphReplaysStayCorrectWithoutCounterReset) {
  MEGACUT_REQUIRE_GPU();
  const ModelCase c = model_case("tiny-qwen3", 8, 16);
  const HostWeights weights = HostWeights::random(c.spec, 3);
  RunOptions options;
  options.warmup = 0;
  options.runs = 1;
  ScenarioRunner conv(c.spec, c.scenario, weights, options);
  model::Composition comp;
  for (const model::Graph& g : c.graphs) {
    const int mid = g.op_count() / 2;
    comp.stages.push_back(
        {g.stage(), {{model::RegionKind::mk, 0, mid}, {model::RegionKind::mk, mid, g.op_count()}}});
  }
  options.composition = comp;
  ScenarioRunner mk(c.spec, c.scenario, weights, options);
  // prefill, decode, decode, ...: each replay reads what the one before it left (the token).
  for (int replay = 0; replay < 4; ++replay) {
    for (int stage = 0; stage < conv.stage_count(); ++stage) {
      conv.time_replay_ms(stage);
      mk.time_replay_ms(stage);
      expect_same_logits(mk.stage_logits(stage), conv.stage_logits(stage),
                         c.spec.decoder.vocab_size,
                         "replay " + std::to_string(replay) + ", stage " + std::to_string(stage));
    }
  }
}

// Every non-weight tensor and every op's weights in zeroed device memory: planted schedules
// run real bodies on harmless data.
struct ZeroBuffers {
  std::vector<testing::DeviceBuffer> owned;
  StageBuffers buffers;
  explicit ZeroBuffers(const model::Graph& g) {
    buffers.tensors.assign(g.tensors().size(), nullptr);
    for (size_t id = 0; id < g.tensors().size(); ++id) {
      if (g.tensors()[id].role == model::TensorRole::weight) continue;
      owned.emplace_back(static_cast<size_t>(g.tensors()[id].bytes()));
      CUDA_CHECK(cudaMemset(owned.back().get(), 0, owned.back().bytes()));
      buffers.tensors[id] = owned.back().get();
    }
    for (const model::Op& op : g.ops()) {
      int64_t bytes = 0;
      for (int w : op.weights) bytes += g.tensor(w).bytes();
      if (bytes == 0) {
        buffers.op_weights.push_back(nullptr);
        continue;
      }
      owned.emplace_back(static_cast<size_t>(bytes));
      CUDA_CHECK(cudaMemset(owned.back().get(), 0, owned.back().bytes()));
      buffers.op_weights.push_back(owned.back().get());
    }
    executor::wait_for_legacy_stream();
  }
};

// Op `op`'s inputs and weights random (bf16), every other buffer of the stage zeroed; the
// output `out` is poisoned.
struct OpBuffers : ZeroBuffers {
  OpBuffers(const model::Graph& g, int op, uint64_t seed) : ZeroBuffers(g) {
    const model::Op& o = g.op(op);
    for (int id : o.inputs) {
      const std::vector<float> v = testing::random_bf16(seed + id, g.tensor(id).elements());
      fill(buffers.tensors[id], v);
    }
    int64_t weights = 0;
    for (int w : o.weights) weights += g.tensor(w).elements();
    fill(buffers.op_weights[op], testing::random_bf16(seed + 99, weights));
  }
  static void fill(const void* device, const std::vector<float>& values) {
    std::vector<uint16_t> bits(values.size());
    for (size_t i = 0; i < values.size(); ++i) bits[i] = testing::to_bf16(values[i]);
    CUDA_CHECK(cudaMemcpy(const_cast<void*>(device), bits.data(), bits.size() * 2,
                          cudaMemcpyHostToDevice));
    executor::wait_for_legacy_stream();
  }
};

// A weight-streaming linear run as a region of few CTAs (each streams many tiles, its ring
// wrapping round many times) gives the bits of its conventional kernel (one CTA per SM): 1 to 64
// rows, tile widths 16 and 64, edge tiles cut short (777 and 1001 columns), K from a part of one
// stage (72) to sixteen stages (8192).
TEST(MegakernelGpu, StreamedLinearsMatchTheirKernelOnAnyGrid) {
  MEGACUT_REQUIRE_GPU();
  struct Case {
    const char* model;
    int64_t batch;
    const char* op;
    int64_t seq_len = 1;  // decode; more: the prefill head of the sequences' last rows
  };
  int checked = 0;
  for (const Case& c :
       {Case{"odd", 1, "layers.0.attn.qkv"}, Case{"odd", 3, "lm_head"},
        Case{"odd", 64, "layers.0.mlp.down"}, Case{"oddqwen", 9, "lm_head"},
        Case{"llama1b", 1, "layers.0.mlp.down"}, Case{"llama1b", 8, "lm_head"},
        Case{"llama1b", 1, "lm_head", 16}, Case{"llama1b", 32, "layers.0.mlp.gate_up"},
        Case{"qwen06b", 16, "layers.0.attn.qkv"}}) {
    const model::Graph g =
        testing::build_stage(c.model, c.seq_len, c.seq_len == 1 ? 20 : 0, c.batch);
    int op = -1;
    for (const model::Op& o : g.ops()) op = o.name == c.op ? o.index : op;
    ASSERT_GE(op, 0) << c.op;
    const std::string what = std::string(c.model) + " batch " + std::to_string(c.batch) + " " +
                             c.op + " (" + tile_body_name(g, op) + ")";
    ASSERT_NE(tile_body_name(g, op).find("LinearStreamTile"), std::string::npos) << what;
    OpBuffers b(g, op, 17);
    const int out = g.op(op).output;
    const size_t bytes = static_cast<size_t>(g.tensor(out).bytes());
    testing::DeviceBuffer conventional(bytes), region_out(bytes);
    b.buffers.tensors[out] = conventional.get();
    launch_op(g, op, b.buffers, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    const auto want = testing::download<uint8_t>(conventional, bytes);
    for (int ctas : {1, 3, 17, 0}) {  // 0: one CTA per SM
      b.buffers.tensors[out] = region_out.get();
      RegionOptions options;
      options.max_ctas = ctas;
      MegakernelRegion region(g, op, op + 1, b.buffers, options);
      EXPECT_GE(region.config().ring_slots, 2) << what;
      for (int launch = 0; launch < 3; ++launch) {  // a race would move the result
        region_out.poison();
        region.launch(nullptr);
        region.check(nullptr);
        EXPECT_TRUE(testing::download<uint8_t>(region_out, bytes) == want)
            << what << " on " << region.config().grid << " CTAs, launch " << launch
            << ", differs from its kernel";
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 9 * 4);
}

TEST(MegakernelGpu, PlantedHangEndsInWatchdogError) {
  MEGACUT_REQUIRE_GPU();
  const model::Graph g = stage_graph("tiny-llama", 8, 16, "prefill");
  ZeroBuffers zero(g);
  const TaskTable bad =
      waits_on_later_in_own_queue(make_task_table(g, model::make_schedule(g, 1, 6, 3)));
  RegionOptions options;
  options.region_id = 7;
  options.watchdog_ns = 2'000'000;
  EXPECT_THROW(MegakernelRegion(g, bad, zero.buffers, options), Error);  // the host check

  MegakernelRegion region(g, bad, zero.buffers, options, /*verify=*/false);
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  region.launch(stream);
  try {
    region.check(stream);
    ADD_FAILURE() << "the planted hang was not reported";
  } catch (const Error& e) {
    const std::string text = e.what();
    for (const char* word : {"region 7", "watchdog", "on SM", "block ", "waited for task"}) {
      EXPECT_NE(text.find(word), std::string::npos) << word << " missing from: " << text;
    }
  }
  region.check(stream);  // reported once, then cleared
  CUDA_CHECK(cudaStreamDestroy(stream));
}

TEST(TileRegionGpu, PlantedHangEndsInWatchdogError) {
  MEGACUT_REQUIRE_GPU();
  const model::Graph g = stage_graph("tiny-llama", 8, 16, "prefill");
  ZeroBuffers zero(g);
  // Op 2's tile 0 waits for op 1's tile 0 to count 5 runs at once: it never will.
  TileTable bad = make_tile_table(g, 1, 6);
  bad.deps[1].insert(bad.deps[1].begin(), mk::Dep{bad.tile_counter[0], 5});
  for (size_t i = 1; i < bad.dep_offsets[1].size(); ++i) ++bad.dep_offsets[1][i];
  TileRegionOptions options;
  options.region_id = 4;
  options.watchdog_ns = 2'000'000;
  EXPECT_THROW(TileRegion(g, bad, zero.buffers, options), Error);  // the host check

  TileRegion region(g, bad, zero.buffers, options, /*verify=*/false);
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  region.launch(stream);
  try {
    region.check(stream);
    ADD_FAILURE() << "the planted hang was not reported";
  } catch (const Error& e) {
    const std::string text = e.what();
    for (const char* word :
         {"region 4 tile[1:6]", "watchdog", "on SM", "op 2 ", "tile 0 waited", "to reach 5"}) {
      EXPECT_NE(text.find(word), std::string::npos) << word << " missing from: " << text;
    }
  }
  region.check(stream);  // reported once, then cleared
  // A good table on the same buffers completes, launch after launch (its counters run-scaled).
  TileRegion good(g, make_tile_table(g, 1, 6), zero.buffers, options);
  for (int launch = 0; launch < 3; ++launch) good.launch(stream);
  good.check(stream);
  CUDA_CHECK(cudaStreamDestroy(stream));
}

TEST(MegakernelGpu, ConfigAndTimingRecords) {
  MEGACUT_REQUIRE_GPU();
  const model::Graph g = stage_graph("tiny-llama", 8, 16, "decode");
  ZeroBuffers zero(g);
  RegionOptions options;
  options.timing = true;
  MegakernelRegion region(g, 1, g.op_count() - 2, zero.buffers, options);
  const RegionConfig& cfg = region.config();
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  EXPECT_LE(cfg.grid, sms);
  EXPECT_GE(cfg.blocks_per_sm, 1);
  EXPECT_GT(cfg.registers, 0);
  std::printf("%s\n", cfg.to_json().dump().c_str());
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  region.launch(stream);
  region.check(stream);
  const std::vector<TaskTimingRecord> t = region.read_timings(stream);
  ASSERT_EQ(static_cast<int>(t.size()), cfg.tasks);
  int fed = 0;  // tasks whose bodies took flagged words: their inputs came between start and end
  for (const TaskTimingRecord& r : t) {
    EXPECT_GT(r.start_ns, 0u);
    EXPECT_GE(r.end_ns, r.start_ns);
    EXPECT_LT(r.block, cfg.grid);
    if (r.inputs_ns == 0) continue;
    ++fed;
    EXPECT_GE(r.inputs_ns, r.start_ns) << "task " << r.task;
    EXPECT_LE(r.inputs_ns, r.end_ns) << "task " << r.task;
  }
  EXPECT_GT(cfg.flagged_inputs, 0);
  EXPECT_GT(fed, 0) << "no task recorded when its flagged inputs were there";
  CUDA_CHECK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace megacut::executor
