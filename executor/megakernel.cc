#include "executor/megakernel.h"

#include <cuda.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "executor/cuda_check.h"
#include "executor/device.h"
#include "executor/device_memory.h"
#include "executor/driver_entry.h"
#include "executor/megakernel_bodies.h"
#include "executor/megakernel_codegen.h"
#include "executor/tensor_map.h"
#include "executor/tiles/stream_shape.h"
#include "executor/watchdog.h"
#include "model/error.h"
#include "model/schedule.h"

namespace megacut::executor {
namespace {

// The driver functions the region needs (executor/driver_entry.h).
struct Driver {
  CUresult (*module_load_data)(CUmodule*, const void*) = nullptr;
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*func_get_attribute)(int*, CUfunction_attribute, CUfunction) = nullptr;
  CUresult (*func_set_attribute)(CUfunction, CUfunction_attribute, int) = nullptr;
  CUresult (*occupancy)(int*, CUfunction, int, size_t) = nullptr;
  CUresult (*launch_kernel_ex)(const CUlaunchConfig*, CUfunction, void**, void**) = nullptr;
  CUresult (*get_error_string)(CUresult, const char**) = nullptr;
};

const Driver& driver() {
  static const Driver d = [] {
    Driver d;
    driver_entry("cuModuleLoadData", d.module_load_data);
    driver_entry("cuModuleGetFunction", d.module_get_function);
    driver_entry("cuFuncGetAttribute", d.func_get_attribute);
    driver_entry("cuFuncSetAttribute", d.func_set_attribute);
    driver_entry("cuOccupancyMaxActiveBlocksPerMultiprocessor", d.occupancy);
    driver_entry("cuLaunchKernelEx", d.launch_kernel_ex);
    driver_entry("cuGetErrorString", d.get_error_string);
    return d;
  }();
  return d;
}

void cu_check(CUresult r, const char* what, const std::string& where) {
  if (r == CUDA_SUCCESS) return;
  const char* text = "unknown error";
  if (driver().get_error_string) driver().get_error_string(r, &text);
  throw Error(where + ": " + what + " failed: " + text);
}

// Loaded modules by kernel key, for the process's life: regions with the same bodies share one.
CUfunction load_function(const CompiledKernel& k, const std::string& where) {
  static std::mutex mutex;
  static std::map<std::string, CUfunction> loaded;
  std::lock_guard lock(mutex);
  if (auto it = loaded.find(k.key); it != loaded.end()) return it->second;
  CUmodule module = nullptr;
  cu_check(driver().module_load_data(&module, k.cubin.data()), "cuModuleLoadData", where);
  CUfunction fn = nullptr;
  cu_check(driver().module_get_function(&fn, module, kRegionKernelName), "cuModuleGetFunction",
           where);
  // Let the kernel take up to the device's opt-in shared memory once, as the conventional
  // kernels do: regions sharing this kernel may need different amounts.
  const int optin = current_device().smem_per_block_optin;
  int static_bytes = 0;
  cu_check(driver().func_get_attribute(&static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn),
           "cuFuncGetAttribute", where);
  cu_check(driver().func_set_attribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                       optin - static_bytes),
           "cuFuncSetAttribute", where);
  loaded.emplace(k.key, fn);
  return fn;
}

}  // namespace

nlohmann::json RegionConfig::to_json() const {
  return {{"op_begin", op_begin},
          {"op_end", op_end},
          {"tasks", tasks},
          {"bodies", bodies},
          {"grid", grid},
          {"block_threads", block_threads},
          {"dynamic_smem_bytes", dynamic_smem_bytes},
          {"ring_slots", ring_slots},
          {"flagged_inputs", flagged_inputs},
          {"static_smem_bytes", static_smem_bytes},
          {"registers", registers},
          {"local_bytes", local_bytes},
          {"blocks_per_sm", blocks_per_sm},
          {"sm_count", sm_count},
          {"kernel_key", kernel_key},
          {"cache_hit", cache_hit},
          {"compile_ms", compile_ms}};
}

struct MegakernelRegion::Impl {
  const model::Graph& graph;
  RegionOptions options;
  std::string name;
  TaskTable table;
  RegionConfig config;
  CUfunction function = nullptr;
  DeviceArray<char> layouts;
  DeviceArray<mk::Task> tasks;
  DeviceArray<int> queue_begin;
  DeviceArray<mk::Dep> deps;
  DeviceArray<unsigned long long> counters, arrivals;
  WatchdogRecord error;
  DeviceArray<mk::TaskTiming> timings;
  DeviceArray<unsigned long long> cta_entry_ns;
  std::vector<DeviceArray<unsigned long long>> flagged_words;  // one per op giving them
  std::vector<model::DataEdge> by_data;
  int ring_offset = 0;
  mk::Params params{};

  Impl(const model::Graph& g, int op_begin, int op_end, RegionOptions o) : graph(g), options(o) {
    name = "megakernel region " + std::to_string(o.region_id) + " (" + g.stage() + " ops [" +
           std::to_string(op_begin) + ", " + std::to_string(op_end) + "))";
    if (op_begin < 0 || op_end > g.op_count() || op_begin >= op_end) {
      throw Error(name + ": not a range of the stage's " + std::to_string(g.op_count()) + " ops");
    }
    config.op_begin = op_begin;
    config.op_end = op_end;
    if (o.watchdog_ns == 0) throw Error(name + ": a watchdog of 0 ns gives up at once");
  }

  // Compiles (or loads) the kernel and fills the configuration but the grid.
  void compile(const std::vector<RegionBody>& bodies, const std::vector<std::string>& names) {
    const DeviceInfo device = current_device();
    const CompiledKernel k =
        compile_region_kernel(region_kernel_source(names, options.timing), device.arch, name);
    function = load_function(k, name);
    config.kernel_key = k.key;
    config.cache_hit = k.cache_hit;
    config.compile_ms = k.compile_ms;
    config.bodies = static_cast<int>(names.size());
    config.sm_count = device.sm_count;
    int scratch_bytes = 0;
    bool streamed = false;
    for (const RegionBody& b : bodies) {
      config.block_threads = std::max(config.block_threads, b.threads);
      scratch_bytes = std::max(scratch_bytes, b.smem_bytes);
      streamed = streamed || b.streamed;
    }
    const Driver& d = driver();
    cu_check(d.func_get_attribute(&config.static_smem_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                  function),
             "cuFuncGetAttribute", name);
    // The ring takes the slots the scratch leaves of the shared memory a block may have.
    config.dynamic_smem_bytes = (scratch_bytes + 127) / 128 * 128;
    if (streamed) {
      config.block_threads += tiles::kRegionProducerThreads;
      config.ring_slots =
          tiles::stream_ring_slots((device.smem_per_block_optin - config.static_smem_bytes -
                                    config.dynamic_smem_bytes - tiles::kStreamRingAlignBytes) /
                                   tiles::kStreamSlotBytes);
      if (config.ring_slots < 2) {
        throw Error(name + ": its bodies' " + std::to_string(scratch_bytes) +
                    " bytes of scratch leave no room for a weight ring of two 16 KB slots");
      }
      ring_offset = config.dynamic_smem_bytes;
      config.dynamic_smem_bytes +=
          tiles::kStreamRingAlignBytes + config.ring_slots * tiles::kStreamSlotBytes;
    }
    int max_threads = 0;
    cu_check(d.func_get_attribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function),
             "cuFuncGetAttribute", name);
    if (max_threads < config.block_threads) {
      throw Error(name + ": the kernel takes " + std::to_string(max_threads) +
                  " threads per block, its bodies need " + std::to_string(config.block_threads));
    }
    cu_check(d.func_get_attribute(&config.registers, CU_FUNC_ATTRIBUTE_NUM_REGS, function),
             "cuFuncGetAttribute", name);
    cu_check(
        d.func_get_attribute(&config.local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, function),
        "cuFuncGetAttribute", name);
    cu_check(d.occupancy(&config.blocks_per_sm, function, config.block_threads,
                         static_cast<size_t>(config.dynamic_smem_bytes)),
             "cuOccupancyMaxActiveBlocksPerMultiprocessor", name);
    if (config.blocks_per_sm < 1) {
      throw Error(name + ": no CTA of " + std::to_string(config.block_threads) + " threads, " +
                  std::to_string(config.registers) + " registers and " +
                  std::to_string(config.dynamic_smem_bytes) + " bytes of shared memory fits an SM");
    }
  }

  // Where an op of the region reads as its x the output of an earlier op of the region, and
  // both bodies can, x is handed over as flagged words (tiles/flagged.cuh; model::data_edges
  // says where): the producer's body writes them besides its output, the consumer's polls them
  // instead of the producer's counters, and the consumer's dependencies on the producer leave the
  // task table (by_data). The words start zeroed (no run) and are the region's own.
  void hand_over_by_data(std::vector<RegionBody>& bodies, const StageBuffers& buffers) {
    if (!options.flagged_hand_overs) return;
    const int begin = config.op_begin, end = config.op_end;
    by_data = model::data_edges(
        graph, begin, end, [&](int op) { return bodies[op - begin].takes_flagged_x; },
        [&](int op) { return bodies[op - begin].gives_flagged_y; });
    std::vector<FlaggedWords> words(static_cast<size_t>(end - begin));
    for (const model::DataEdge& e : by_data) {
      FlaggedWords& given = words[e.producer - begin];
      if (given.y == nullptr) {
        const int64_t elements = graph.tensor(graph.op(e.consumer).inputs[0]).elements();
        flagged_words.emplace_back(static_cast<size_t>(elements / 2));
        given.y = flagged_words.back().get();
      }
      words[e.consumer - begin].x = given.y;
    }
    for (int op = begin; op < end; ++op) {
      const FlaggedWords& w = words[op - begin];
      if (w.x != nullptr || w.y != nullptr) bodies[op - begin] = region_body(graph, op, buffers, w);
    }
    config.flagged_inputs = static_cast<int>(by_data.size());
  }

  // Fills bodies and layout offsets into the table, checks it and uploads everything.
  void upload(const std::vector<RegionBody>& bodies, const std::vector<std::string>& names,
              bool verify) {
    config.grid = table.queue_count();
    config.tasks = table.task_count;
    if (config.grid < 1) throw Error(name + ": no queues");
    // Co-residency: a CTA that never starts would leave its dependants spinning.
    if (config.grid > config.sm_count * config.blocks_per_sm) {
      throw Error(name + ": " + std::to_string(config.grid) + " CTAs cannot all be resident (" +
                  std::to_string(config.sm_count) + " SMs x " +
                  std::to_string(config.blocks_per_sm) + ")");
    }
    if (verify) {
      if (const std::string why = find_deadlock(table); !why.empty()) throw Error(why);
    }
    // The layouts, 16-byte aligned, each body's tensor maps after its layout, one after the other
    // and 64-byte aligned (the copy engine's rule); nothing at offset 0 but the first layout.
    std::vector<char> blob;
    std::vector<int> offset(bodies.size()), map_offset(bodies.size(), 0), body_case(bodies.size());
    auto append = [&](const std::vector<std::byte>& bytes, size_t alignment) {
      blob.resize((blob.size() + alignment - 1) / alignment * alignment);
      const int at = static_cast<int>(blob.size());
      const auto* p = reinterpret_cast<const char*>(bytes.data());
      blob.insert(blob.end(), p, p + bytes.size());
      return at;
    };
    for (size_t i = 0; i < bodies.size(); ++i) {
      if (bodies[i].layout.size() > static_cast<size_t>(mk::kMaxLayoutBytes)) {
        throw Error(name + ": " + bodies[i].name + "'s layout of " +
                    std::to_string(bodies[i].layout.size()) + " bytes is over the " +
                    std::to_string(mk::kMaxLayoutBytes) + " a task can copy");
      }
      offset[i] = append(bodies[i].layout, 16);
      for (size_t m = 0; m < bodies[i].maps.size(); ++m) {
        const CUtensorMap map = encode_tensor_map(bodies[i].maps[m], name);
        std::vector<std::byte> bytes(sizeof map);
        std::memcpy(bytes.data(), &map, sizeof map);
        const int at = append(bytes, 64);
        if (m == 0) map_offset[i] = at;
      }
      body_case[i] = static_cast<int>(std::lower_bound(names.begin(), names.end(), bodies[i].name) -
                                      names.begin());
    }
    // The last layout's 16-byte chunks may be read whole.
    blob.resize(blob.size() + mk::kMaxLayoutBytes);
    for (mk::Task& t : table.tasks) {
      const int slot = table.op_of_task.at(t.index) - table.op_begin;
      t.body = body_case[slot];
      t.layout_offset = offset[slot];
      t.map_offset = map_offset[slot];
      t.layout_bytes = static_cast<int>(bodies[slot].layout.size());
    }
    layouts = DeviceArray<char>(blob);
    tasks = DeviceArray<mk::Task>(table.tasks);
    queue_begin = DeviceArray<int>(table.queue_begin);
    deps = DeviceArray<mk::Dep>(table.deps);
    counters = DeviceArray<unsigned long long>(static_cast<size_t>(table.counter_count()));
    arrivals = DeviceArray<unsigned long long>(1);
    if (options.timing) {
      timings = DeviceArray<mk::TaskTiming>(table.task_count);
      cta_entry_ns = DeviceArray<unsigned long long>(static_cast<size_t>(table.queue_count()));
    }
    params.layouts = layouts.get();
    params.tasks = tasks.get();
    params.queue_begin = queue_begin.get();
    params.deps = deps.get();
    params.counters = counters.get();
    params.arrivals = arrivals.get();
    params.error = error.get();
    params.timings = timings.get();
    params.cta_entry_ns = cta_entry_ns.get();
    params.watchdog_ns = options.watchdog_ns;
    params.ring_offset = ring_offset;
    params.ring_slots = config.ring_slots;
    params.region = options.region_id;
  }
};

namespace {

std::vector<RegionBody> bodies_of(const model::Graph& g, int op_begin, int op_end,
                                  const StageBuffers& buffers) {
  std::vector<RegionBody> bodies;
  for (int op = op_begin; op < op_end; ++op) bodies.push_back(region_body(g, op, buffers));
  return bodies;
}

}  // namespace

MegakernelRegion::MegakernelRegion(const model::Graph& graph, int op_begin, int op_end,
                                   const StageBuffers& buffers, RegionOptions options)
    : impl_(std::make_unique<Impl>(graph, op_begin, op_end, options)) {
  Impl& m = *impl_;
  std::vector<RegionBody> bodies = bodies_of(graph, op_begin, op_end, buffers);
  m.hand_over_by_data(bodies, buffers);
  const std::vector<std::string> names = region_body_names(graph, op_begin, op_end);
  m.compile(bodies, names);
  const int64_t tasks =
      (op_end < graph.op_count() ? graph.first_task(op_end) : graph.task_count()) -
      graph.first_task(op_begin);
  int grid = static_cast<int>(std::min<int64_t>(m.config.sm_count, tasks));
  if (options.max_ctas > 0) grid = std::min(grid, options.max_ctas);
  m.table = make_task_table(graph, model::make_schedule(graph, op_begin, op_end, grid), m.by_data);
  m.upload(bodies, names, true);
}

MegakernelRegion::MegakernelRegion(const model::Graph& graph, TaskTable table,
                                   const StageBuffers& buffers, RegionOptions options, bool verify)
    : impl_(std::make_unique<Impl>(graph, table.op_begin, table.op_end, options)) {
  Impl& m = *impl_;
  // Its bodies hand nothing over as words: a table without the dependencies of such hand-overs
  // would leave their consumers waiting for nothing.
  if (!table.by_data.empty()) {
    throw Error(m.name +
                ": a given task table cannot wait by data (its bodies take no flagged "
                "words)");
  }
  const std::vector<RegionBody> bodies = bodies_of(graph, table.op_begin, table.op_end, buffers);
  const std::vector<std::string> names = region_body_names(graph, table.op_begin, table.op_end);
  m.compile(bodies, names);
  m.table = std::move(table);
  m.upload(bodies, names, verify);
}

MegakernelRegion::~MegakernelRegion() = default;

void MegakernelRegion::launch(cudaStream_t stream) {
  Impl& m = *impl_;
  // A cooperative launch: the driver makes every CTA resident at once or fails the launch. The
  // host's check (grid within SMs x occupancy) says they fit; this has the driver hold to it,
  // where a plain launch would start a CTA only once an SM frees up, which a region's spinning
  // CTAs never let happen.
  CUlaunchAttribute attrs[2]{};
  unsigned attr_count = 0;
  attrs[attr_count].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attrs[attr_count++].value.cooperative = 1;
  if (m.options.pdl) {
    attrs[attr_count].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[attr_count++].value.programmaticStreamSerializationAllowed = 1;
  }
  CUlaunchConfig config{};
  config.gridDimX = static_cast<unsigned>(m.config.grid);
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = static_cast<unsigned>(m.config.block_threads);
  config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = static_cast<unsigned>(m.config.dynamic_smem_bytes);
  config.hStream = reinterpret_cast<CUstream>(stream);
  config.attrs = attrs;
  config.numAttrs = attr_count;
  void* args[] = {&m.params};
  cu_check(driver().launch_kernel_ex(&config, m.function, args, nullptr), "cuLaunchKernelEx",
           m.name);
}

void MegakernelRegion::check(cudaStream_t stream) {
  Impl& m = *impl_;
  m.error.check(stream, m.name, m.options.watchdog_ns, [&](int task) -> std::string {
    if (task >= m.table.task_count && task < m.table.counter_count()) {
      const int op = m.table.op_begin + (task - m.table.task_count);
      return "the count of op " + std::to_string(op) + " " + m.graph.op(op).name;
    }
    if (task < 0 || task >= m.table.task_count) return "task " + std::to_string(task);
    const model::TaskRef ref = m.graph.task(m.table.first_task + task);
    return "task " + std::to_string(task) + " (op " + std::to_string(ref.op) + " " +
           m.graph.op(ref.op).name + ", tile " + std::to_string(ref.tile) + ")";
  });
}

const RegionConfig& MegakernelRegion::config() const { return impl_->config; }
const TaskTable& MegakernelRegion::table() const { return impl_->table; }

std::vector<TaskTimingRecord> MegakernelRegion::read_timings(cudaStream_t stream) const {
  const Impl& m = *impl_;
  if (!m.options.timing) return {};
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<mk::TaskTiming> raw(static_cast<size_t>(m.table.task_count));
  CUDA_CHECK(cudaMemcpy(raw.data(), m.timings.get(), raw.size() * sizeof(mk::TaskTiming),
                        cudaMemcpyDeviceToHost));
  std::vector<TaskTimingRecord> out;
  for (int i = 0; i < m.table.task_count; ++i) {
    const model::TaskRef ref = m.graph.task(m.table.first_task + i);
    out.push_back({i, ref.op, ref.tile, raw[i].start_ns, raw[i].end_ns, static_cast<int>(raw[i].sm),
                   static_cast<int>(raw[i].block), raw[i].signal_ns, raw[i].publish_ns,
                   raw[i].inputs_ns});
  }
  return out;
}

std::vector<uint64_t> MegakernelRegion::read_cta_entries(cudaStream_t stream) const {
  const Impl& m = *impl_;
  if (!m.options.timing) return {};
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<uint64_t> out(static_cast<size_t>(m.table.queue_count()));
  static_assert(sizeof(unsigned long long) == sizeof(uint64_t));
  CUDA_CHECK(cudaMemcpy(out.data(), m.cta_entry_ns.get(), out.size() * sizeof(uint64_t),
                        cudaMemcpyDeviceToHost));
  return out;
}

}  // namespace megacut::executor
