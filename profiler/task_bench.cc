#include "profiler/task_bench.h"

#include <algorithm>
#include <cstdint>

#include "executor/cuda_check.h"
#include "executor/device.h"
#include "executor/tiles/stream_shape.h"
#include "model/error.h"
#include "model/stats.h"
#include "profiler/nvtx.h"

namespace megacut::profiler {

std::vector<int> default_task_ctas(int sm_count) {
  if (sm_count < 1) throw Error("task benchmarks: the device has no SMs");
  std::vector<int> ctas{1, std::max(1, sm_count / 4), std::max(1, sm_count / 2), sm_count};
  ctas.erase(std::unique(ctas.begin(), ctas.end()), ctas.end());
  return ctas;
}

std::vector<double> task_durations_ns(const executor::TaskTable& table,
                                      const std::vector<executor::TaskTimingRecord>& records) {
  if (static_cast<int>(records.size()) != table.task_count) {
    throw Error("task timing: " + std::to_string(records.size()) + " records for " +
                std::to_string(table.task_count) + " tasks");
  }
  std::vector<double> durations;
  durations.reserve(records.size());
  for (int q = 0; q < table.queue_count(); ++q) {
    const int first = table.queue_begin[q], last = table.queue_begin[q + 1];
    for (int i = first; i < last; ++i) {
      const executor::TaskTimingRecord& r = records.at(table.tasks[i].index);
      const uint64_t until =
          i + 1 < last ? records.at(table.tasks[i + 1].index).start_ns : r.end_ns;
      if (r.start_ns == 0 || r.end_ns < r.start_ns || until < r.start_ns) {
        throw Error("task timing: task " + std::to_string(r.task) + " (op " + std::to_string(r.op) +
                    ", tile " + std::to_string(r.tile) + ", queue " + std::to_string(q) +
                    ") has no consistent record: start " + std::to_string(r.start_ns) + ", end " +
                    std::to_string(r.end_ns) + ", next start " + std::to_string(until));
      }
      durations.push_back(static_cast<double>(until - r.start_ns));
    }
  }
  return durations;
}

std::vector<double> task_startup_ns(const executor::TaskTable& table,
                                    const std::vector<executor::TaskTimingRecord>& records,
                                    const std::vector<uint64_t>& cta_entry_ns) {
  if (static_cast<int>(cta_entry_ns.size()) != table.queue_count() ||
      static_cast<int>(records.size()) != table.task_count) {
    throw Error("task timing: " + std::to_string(cta_entry_ns.size()) + " CTA starts and " +
                std::to_string(records.size()) + " task records for " +
                std::to_string(table.queue_count()) + " queues and " +
                std::to_string(table.task_count) + " tasks");
  }
  std::vector<double> startup;
  for (int q = 0; q < table.queue_count(); ++q) {
    if (table.queue_begin[q] == table.queue_begin[q + 1]) continue;
    const executor::TaskTimingRecord& first = records.at(table.tasks[table.queue_begin[q]].index);
    const uint64_t entry = cta_entry_ns[q];
    if (entry == 0) {
      throw Error("task timing: the CTA of queue " + std::to_string(q) +
                  " recorded no start (cta_entry_ns)");
    }
    if (first.start_ns < entry) {
      throw Error("task timing: queue " + std::to_string(q) + " starts at " +
                  std::to_string(entry) + " but its first task (" + std::to_string(first.task) +
                  ") at " + std::to_string(first.start_ns));
    }
    startup.push_back(static_cast<double>(first.start_ns - entry));
  }
  return startup;
}

std::vector<OpTimeline> op_timelines(const executor::TaskTable& table,
                                     const std::vector<executor::TaskTimingRecord>& records,
                                     const std::vector<uint64_t>& cta_entry_ns) {
  // Both check every record and every CTA start.
  task_durations_ns(table, records);
  task_startup_ns(table, records, cta_entry_ns);
  uint64_t origin = UINT64_MAX;
  for (int q = 0; q < table.queue_count(); ++q) {
    if (table.queue_begin[q] < table.queue_begin[q + 1]) origin = std::min(origin, cta_entry_ns[q]);
  }
  std::vector<OpTimeline> ops;
  for (int op = table.op_begin; op < table.op_end; ++op) ops.push_back({.op = op});
  for (int q = 0; q < table.queue_count(); ++q) {
    uint64_t previous_end = cta_entry_ns[q];
    for (int i = table.queue_begin[q]; i < table.queue_begin[q + 1]; ++i) {
      const executor::TaskTimingRecord& r = records.at(table.tasks[i].index);
      OpTimeline& t = ops.at(r.op - table.op_begin);
      const double start = static_cast<double>(r.start_ns - origin);
      const double end = static_cast<double>(r.end_ns - origin);
      t.first_start_ns = t.tasks == 0 ? start : std::min(t.first_start_ns, start);
      t.last_end_ns = t.tasks == 0 ? end : std::max(t.last_end_ns, end);
      ++t.tasks;
      t.busy_ns += end - start;
      t.wait_ns += static_cast<double>(r.start_ns - std::min(previous_end, r.start_ns));
      if (r.publish_ns >= r.end_ns && r.publish_ns != 0) {
        t.signal_ns += static_cast<double>(r.publish_ns - r.end_ns);
        ++t.signaled;
      }
      previous_end = r.end_ns;
    }
  }
  std::erase_if(ops, [](const OpTimeline& t) { return t.tasks == 0; });
  return ops;
}

std::vector<RegionTaskTiming> read_task_timings(const executor::ScenarioRunner& runner) {
  std::vector<RegionTaskTiming> timings;
  for (int s = 0; s < runner.stage_count(); ++s) {
    for (const executor::MegakernelRegion* region : runner.mk_regions(s)) {
      RegionTaskTiming t{.stage = s, .region = region};
      t.records = region->read_timings(runner.stream());
      t.cta_entry_ns = region->read_cta_entries(runner.stream());
      t.ops = op_timelines(region->table(), t.records, t.cta_entry_ns);
      timings.push_back(std::move(t));
    }
  }
  return timings;
}

nlohmann::json task_timing_to_json(const executor::ScenarioRunner& runner,
                                   const std::vector<RegionTaskTiming>& timings,
                                   const executor::Measurement& measurement) {
  nlohmann::json stages = nlohmann::json::array();
  for (int s = 0; s < runner.stage_count(); ++s) {
    const model::Graph& graph = runner.stage_graph(s);
    nlohmann::json regions = nlohmann::json::array();
    for (const RegionTaskTiming& t : timings) {
      if (t.stage != s) continue;
      nlohmann::json tasks = nlohmann::json::array();
      for (const executor::TaskTimingRecord& r : t.records) {
        tasks.push_back({{"task", r.task},
                         {"op", r.op},
                         {"tile", r.tile},
                         {"sm", r.sm},
                         {"block", r.block},
                         {"start_ns", r.start_ns},
                         {"end_ns", r.end_ns},
                         {"signal_ns", r.signal_ns},
                         {"publish_ns", r.publish_ns},
                         {"inputs_ns", r.inputs_ns}});
      }
      regions.push_back({{"config", t.region->config().to_json()},
                         {"cta_entry_ns", t.cta_entry_ns},
                         {"tasks", tasks}});
    }
    nlohmann::json op_names = nlohmann::json::array();
    for (const model::Op& op : graph.ops()) op_names.push_back(op.name);
    stages.push_back({{"stage", graph.stage()}, {"ops", op_names}, {"regions", regions}});
  }
  return {
      {"schema", kTaskTimingSchema}, {"measurement", measurement.to_json()}, {"stages", stages}};
}

L2Flush::L2Flush() {
  bytes_ = 2 * static_cast<size_t>(std::max<int64_t>(executor::current_device().l2_bytes, 1 << 20));
  CUDA_CHECK(cudaMalloc(&buffer_, bytes_));
}

L2Flush::~L2Flush() {
  if (buffer_ != nullptr) cudaFree(buffer_);
}

void L2Flush::run(cudaStream_t stream) { CUDA_CHECK(cudaMemsetAsync(buffer_, 0, bytes_, stream)); }

OpTasks benchmark_op_tasks(executor::ScenarioRunner& runner, int stage, int op,
                           const TaskBenchOptions& options, L2Flush& flush) {
  const model::Graph& graph = runner.stage_graph(stage);
  const int64_t tiles = graph.op(op).tiling.count();
  std::vector<int> ctas = options.ctas;
  for (int& c : ctas) c = static_cast<int>(std::min<int64_t>(c, tiles));
  ctas.erase(std::unique(ctas.begin(), ctas.end()), ctas.end());
  const cudaStream_t stream = runner.stream();
  NvtxRange range(graph.stage() + " " + graph.op(op).name + " tasks");

  // Most CTAs first: the first launch, not timed, pays for first touches of the op's code (and
  // costs least there); the regions after it run the same kernel.
  OpTasks result;
  bool warm = false;
  for (auto it = ctas.rbegin(); it != ctas.rend(); ++it) {
    const int c = *it;
    executor::RegionOptions region_options;
    region_options.timing = true;
    region_options.max_ctas = c;
    const std::unique_ptr<executor::MegakernelRegion> region =
        runner.make_region(stage, op, op + 1, region_options);
    const executor::RegionConfig& config = region->config();
    if (config.grid != c) {
      throw Error(graph.stage() + " op " + std::to_string(op) + " " + graph.op(op).name +
                  ": asked for a region of " + std::to_string(c) + " CTAs, got " +
                  std::to_string(config.grid));
    }
    ++result.regions;
    if (!config.cache_hit) {
      ++result.compiled;
      result.compile_ms += config.compile_ms;
    }
    if (it == ctas.rbegin()) {
      result.region = {config.block_threads, config.registers,
                       int64_t{config.dynamic_smem_bytes} + config.static_smem_bytes,
                       int64_t{config.ring_slots} * tiles::kStreamSlotBytes};
    }
    const int samples_per_launch = static_cast<int>(tiles);
    const int launches =
        std::clamp((options.min_samples + samples_per_launch - 1) / samples_per_launch, 1,
                   std::max(1, options.max_launches));
    std::vector<double> durations, startup;
    for (int l = warm ? 0 : -1; l < launches; ++l) {
      flush.run(stream);
      region->launch(stream);
      region->check(stream);
      if (l < 0) continue;
      const std::vector<executor::TaskTimingRecord> records = region->read_timings(stream);
      const std::vector<double> d = task_durations_ns(region->table(), records);
      durations.insert(durations.end(), d.begin(), d.end());
      const std::vector<double> s =
          task_startup_ns(region->table(), records, region->read_cta_entries(stream));
      startup.insert(startup.end(), s.begin(), s.end());
    }
    warm = true;
    result.tasks.insert(result.tasks.begin(), {c, model::compute_stats(durations, "ns"),
                                               model::compute_stats(startup, "ns")});
  }
  return result;
}

}  // namespace megacut::profiler
