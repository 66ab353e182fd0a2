#include "executor/tile_region.h"

#include "executor/conventional.h"
#include "executor/cuda_check.h"
#include "executor/device_memory.h"
#include "executor/op_support.h"
#include "executor/tile_sync_abi.h"
#include "executor/watchdog.h"
#include "model/error.h"

namespace megacut::executor {

TileTable make_tile_table(const model::Graph& graph, int op_begin, int op_end) {
  if (op_begin < 0 || op_end > graph.op_count() || op_begin >= op_end) {
    throw Error("tile region [" + std::to_string(op_begin) + ", " + std::to_string(op_end) +
                ") is not within stage " + graph.stage() + "'s " +
                std::to_string(graph.op_count()) + " ops");
  }
  TileTable t;
  t.op_begin = op_begin;
  t.op_end = op_end;
  const model::TaskId first = graph.first_task(op_begin);
  t.tile_count = static_cast<int>(graph.first_task(op_end) - first);
  for (int op = op_begin; op < op_end; ++op) {
    t.tile_counter.push_back(static_cast<int>(graph.first_task(op) - first));
    std::vector<int> offsets{0};
    std::vector<mk::Dep> deps;
    for (int64_t tile = 0; tile < graph.op(op).tiling.count(); ++tile) {
      for (const int64_t e : graph.dep_entries(graph.task_id(op, tile))) {
        if (e < 0) {
          const int whole = static_cast<int>(-(e + 1));
          if (whole >= op_begin) {
            deps.push_back({t.op_counter(whole), static_cast<int>(graph.op(whole).tiling.count())});
          }
        } else if (graph.task_op(e) >= op_begin) {
          deps.push_back({static_cast<int>(e - first), 1});
        }
      }
      offsets.push_back(static_cast<int>(deps.size()));
    }
    t.dep_offsets.push_back(std::move(offsets));
    t.deps.push_back(std::move(deps));
  }
  return t;
}

std::string find_tile_deadlock(const TileTable& t) {
  const std::string where =
      "tile region [" + std::to_string(t.op_begin) + ", " + std::to_string(t.op_end) + "): ";
  const int ops = t.op_count();
  if (ops < 1) return where + "no ops";
  if (static_cast<int>(t.tile_counter.size()) != ops ||
      static_cast<int>(t.dep_offsets.size()) != ops || static_cast<int>(t.deps.size()) != ops) {
    return where + "the tables do not have one entry per op";
  }
  // Each op's tiles: [tile_counter[i], next op's), from 0.
  if (t.tile_counter[0] != 0)
    return where + "op " + std::to_string(t.op_begin) + "'s tiles do not start at counter 0";
  for (int i = 0; i < ops; ++i) {
    const int end = i + 1 < ops ? t.tile_counter[i + 1] : t.tile_count;
    if (t.tile_counter[i] < 0 || end <= t.tile_counter[i] || end > t.tile_count ||
        static_cast<int>(t.dep_offsets[i].size()) != end - t.tile_counter[i] + 1) {
      return where + "op " + std::to_string(t.op_begin + i) + " has no tiles of its own";
    }
  }
  for (int i = 0; i < ops; ++i) {
    const int op = t.op_begin + i;
    const std::vector<int>& offsets = t.dep_offsets[i];
    for (size_t tile = 0; tile + 1 < offsets.size(); ++tile) {
      const std::string name =
          "op " + std::to_string(op) + ", tile " + std::to_string(tile) + " waits for ";
      if (offsets[tile] < 0 || offsets[tile + 1] < offsets[tile] ||
          offsets[tile + 1] > static_cast<int>(t.deps[i].size())) {
        return where + "op " + std::to_string(op) + ", tile " + std::to_string(tile) +
               " has a bad dependency range";
      }
      for (int d = offsets[tile]; d < offsets[tile + 1]; ++d) {
        const mk::Dep dep = t.deps[i][d];
        if (dep.counter >= t.tile_count && dep.counter < t.started_counter()) {
          const int slot = dep.counter - t.tile_count;
          const int tiles =
              (slot + 1 < ops ? t.tile_counter[slot + 1] : t.tile_count) - t.tile_counter[slot];
          if (slot >= i) {
            return where + name + "the count of op " + std::to_string(t.op_begin + slot) +
                   ", not an earlier op of the region";
          }
          if (dep.count != tiles) {
            return where + name + "op " + std::to_string(t.op_begin + slot) + " to count " +
                   std::to_string(dep.count) + " tiles of its " + std::to_string(tiles);
          }
          continue;
        }
        if (dep.counter < 0 || dep.counter >= t.tile_counter[i] || dep.count != 1) {
          return where + name + "counter " + std::to_string(dep.counter) +
                 ", not a tile of an earlier op of the region";
        }
      }
    }
  }
  return {};
}

struct TileRegion::Impl {
  const model::Graph& graph;
  const StageBuffers& buffers;
  TileTable table;
  TileRegionOptions options;
  DeviceArray<unsigned long long> counters;
  DeviceArray<unsigned long long> arrivals;  // one per op
  std::vector<DeviceArray<int>> dep_offsets;
  std::vector<DeviceArray<mk::Dep>> deps;
  WatchdogRecord error;
  std::vector<TileSync> syncs;
  std::string name;

  Impl(const model::Graph& g, TileTable t, const StageBuffers& b, TileRegionOptions o)
      : graph(g), buffers(b), table(std::move(t)), options(o) {}
};

TileRegion::TileRegion(const model::Graph& graph, int op_begin, int op_end,
                       const StageBuffers& buffers, TileRegionOptions options)
    : TileRegion(graph, make_tile_table(graph, op_begin, op_end), buffers, options) {}

TileRegion::TileRegion(const model::Graph& graph, TileTable table, const StageBuffers& buffers,
                       TileRegionOptions options, bool verify)
    : impl_(std::make_unique<Impl>(graph, std::move(table), buffers, options)) {
  Impl& m = *impl_;
  const TileTable& t = m.table;
  m.name = "stage " + graph.stage() + ", region " + std::to_string(options.region_id) + " tile[" +
           std::to_string(t.op_begin) + ":" + std::to_string(t.op_end) + "]";
  if (verify) {
    if (const std::string why = find_tile_deadlock(t); !why.empty()) {
      throw Error(m.name + ": " + why);
    }
  }
  for (int op = t.op_begin; op < t.op_end; ++op) {
    if (Support s = can_implement(graph, op); !s) throw Error(m.name + ": " + s.reason);
  }
  m.counters = DeviceArray<unsigned long long>(static_cast<size_t>(t.counter_count()));
  m.arrivals = DeviceArray<unsigned long long>(static_cast<size_t>(t.op_count()));
  for (int i = 0; i < t.op_count(); ++i) {
    m.dep_offsets.emplace_back(t.dep_offsets[i]);
    m.deps.emplace_back(t.deps[i]);
    TileSync s{};
    s.counters = m.counters.get();
    s.arrivals = m.arrivals.get() + i;
    s.dep_offsets = m.dep_offsets.back().get();
    s.deps = m.deps.back().get();
    s.error = m.error.get();
    s.watchdog_ns = options.watchdog_ns;
    s.tile_counter = t.tile_counter[i];
    s.op_counter = t.op_counter(t.op_begin + i);
    s.started_counter = t.started_counter();
    s.first = i == 0 ? 1 : 0;
    s.region = options.region_id;
    m.syncs.push_back(s);
  }
}

TileRegion::~TileRegion() = default;

void TileRegion::launch(cudaStream_t stream) {
  Impl& m = *impl_;
  for (int i = 0; i < m.table.op_count(); ++i) {
    // Every kernel after the first may launch while the one before runs: that is the point.
    launch_op(m.graph, m.table.op_begin + i, m.buffers, stream, LinearProvider::ours, nullptr,
              i > 0 || m.options.pdl, &m.syncs[i]);
  }
}

void TileRegion::check(cudaStream_t stream) {
  Impl& m = *impl_;
  const model::TaskId first = m.graph.first_task(m.table.op_begin);
  m.error.check(stream, m.name, m.options.watchdog_ns, [&](int counter) -> std::string {
    if (counter == m.table.started_counter()) return "the region's first kernel";
    if (counter >= m.table.tile_count && counter < m.table.started_counter()) {
      const int op = m.table.op_begin + (counter - m.table.tile_count);
      return "the count of op " + std::to_string(op) + " " + m.graph.op(op).name;
    }
    if (counter < 0 || counter >= m.table.tile_count) return "counter " + std::to_string(counter);
    const model::TaskRef ref = m.graph.task(first + counter);
    return "op " + std::to_string(ref.op) + " " + m.graph.op(ref.op).name + ", tile " +
           std::to_string(ref.tile);
  });
}

const TileTable& TileRegion::table() const { return impl_->table; }

}  // namespace megacut::executor
