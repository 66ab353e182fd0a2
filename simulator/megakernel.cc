#include "simulator/megakernel.h"

#include <algorithm>
#include <cassert>

#include "model/error.h"

namespace megacut::simulator {
namespace {

enum Phase : int64_t { kStart = 0, kMoved = 1, kEnd = 2 };

// The region's state; per-task arrays are indexed by task id minus the first task id.
class Run final : public EventHandler {
 public:
  Run(const model::Graph& graph, const model::Schedule& schedule, const TaskCosts& costs,
      const MegakernelParams& params)
      : graph_(graph),
        schedule_(schedule),
        costs_(costs),
        params_(params),
        first_(graph.first_task(schedule.op_begin)),
        last_(graph.first_task(schedule.op_end - 1) + graph.op(schedule.op_end - 1).tiling.count()),
        bandwidth_(params.bandwidth_bytes_per_ns) {
    const size_t n = static_cast<size_t>(last_ - first_);
    if (costs.fixed_ns.size() != n || costs.bytes.size() != n) {
      throw Error("simulate_megakernel: task costs do not match the region's task count");
    }
    pending_.assign(n, 0);
    ready_.assign(n, 0);
    dep_pred_.assign(n, -1);
    pred_.assign(n, -1);
    queue_of_.assign(n, -1);
    start_.assign(n, -1);
    end_.assign(n, -1);
    const int queues = schedule.queue_count();
    head_.assign(queues, 0);
    busy_.assign(queues, 0);
    free_at_.assign(queues, 0);
    out_.lane_busy_ns.assign(queues, 0);
    for (int q = 0; q < queues; ++q) {
      for (model::TaskId id : schedule.queues[q]) {
        assert(id >= first_ && id < last_ && queue_of_[id - first_] == -1);
        queue_of_[id - first_] = q;
      }
    }
    for (model::TaskId id = first_; id < last_; ++id) {
      if (queue_of_[id - first_] < 0) {
        throw Error("simulate_megakernel: task " + std::to_string(id) + " is on no queue");
      }
      int pending = 0;
      for (auto [it, end] = boost::in_edges(static_cast<uint32_t>(id), graph.tiles()); it != end;
           ++it) {
        if (static_cast<model::TaskId>(boost::source(*it, graph.tiles())) >= first_) ++pending;
      }
      pending_[id - first_] = pending;
    }
    if (params.record_spans) out_.spans.reserve(n);
  }

  MegakernelRun run() {
    engine_.add_resource(&bandwidth_);
    for (int q = 0; q < schedule_.queue_count(); ++q) {
      if (!schedule_.queues[q].empty()) try_start(schedule_.queues[q][0] - first_);
    }
    engine_.run();
    for (size_t j = 0; j < end_.size(); ++j) {
      if (end_[j] < 0) {
        throw Error("simulate_megakernel: task " + std::to_string(first_ + j) +
                    " never ran: the schedule waits on a task placed later in its queue");
      }
    }
    out_.events = engine_.events_processed();
    trace_critical_path();
    return std::move(out_);
  }

  void on_event(TimeNs now, int64_t payload) override {
    const int64_t j = payload >> 2;
    switch (payload & 3) {
      case kStart:
        start_[j] = now;
        if (costs_.bytes[j] > 0) {
          bandwidth_.start(now, costs_.bytes[j], this, (j << 2) | kMoved);
          break;
        }
        [[fallthrough]];
      case kMoved:
        engine_.schedule(now + costs_.fixed_ns[j], this, (j << 2) | kEnd);
        break;
      case kEnd:
        finish(j, now);
        break;
    }
  }

 private:
  // Queues task j's start if its queue has reached it, is idle, and its dependencies are met.
  void try_start(int64_t j) {
    const int q = queue_of_[j];
    if (busy_[q] || pending_[j] > 0) return;
    const auto& queue = schedule_.queues[q];
    if (head_[q] >= queue.size() || queue[head_[q]] - first_ != j) return;
    busy_[q] = 1;
    // The later of the two conditions is what the task waited for: its critical predecessor.
    if (dep_pred_[j] >= 0 && ready_[j] >= free_at_[q]) {
      pred_[j] = dep_pred_[j];
    } else if (head_[q] > 0) {
      pred_[j] = queue[head_[q] - 1] - first_;
    }
    engine_.schedule(std::max(ready_[j], free_at_[q]), this, (j << 2) | kStart);
  }

  void finish(int64_t j, TimeNs now) {
    end_[j] = now;
    const int q = queue_of_[j];
    out_.lane_busy_ns[q] += now - start_[j];
    if (params_.record_spans) {
      const model::TaskRef ref = graph_.task(first_ + j);
      out_.spans.push_back(Span{ref.op, ref.tile, q, start_[j], now});
    }
    busy_[q] = 0;
    free_at_[q] = now;
    ++head_[q];
    const model::TaskId id = first_ + j;
    for (auto [it, end] = boost::out_edges(static_cast<uint32_t>(id), graph_.tiles()); it != end;
         ++it) {
      const model::TaskId next = boost::target(*it, graph_.tiles());
      if (next >= last_) continue;
      const int64_t k = next - first_;
      const TimeNs visible = now + (queue_of_[k] != q ? params_.signal_latency_ns : 0);
      if (visible >= ready_[k]) {
        ready_[k] = visible;
        dep_pred_[k] = static_cast<int32_t>(j);
      }
      if (--pending_[k] == 0) try_start(k);
    }
    const auto& queue = schedule_.queues[q];
    if (head_[q] < queue.size()) try_start(queue[head_[q]] - first_);
  }

  void trace_critical_path() {
    int64_t j = -1;
    for (size_t k = 0; k < end_.size(); ++k) {
      if (j < 0 || end_[k] > end_[j]) j = static_cast<int64_t>(k);
    }
    if (j < 0) return;
    out_.makespan_ns = end_[j];
    std::vector<PathStep> path;
    while (j >= 0) {
      const model::TaskRef ref = graph_.task(first_ + j);
      path.push_back(PathStep{StepKind::task, ref.op, ref.tile, queue_of_[j], start_[j], end_[j]});
      const int64_t p = pred_[j];
      const TimeNs from = p >= 0 ? end_[p] : 0;
      if (start_[j] > from) {
        // Waiting for a signal to cross SMs (or, from the region start, for nothing we model).
        path.push_back(PathStep{StepKind::wait, ref.op, ref.tile, queue_of_[j], from, start_[j]});
      }
      j = p;
    }
    std::reverse(path.begin(), path.end());
    out_.critical_path = std::move(path);
  }

  const model::Graph& graph_;
  const model::Schedule& schedule_;
  const TaskCosts& costs_;
  const MegakernelParams& params_;
  const model::TaskId first_;
  const model::TaskId last_;
  Engine engine_;
  SharedBandwidth bandwidth_;

  std::vector<int32_t> pending_;   // dependencies inside the region not yet signalled
  std::vector<TimeNs> ready_;      // when the last signalled dependency became visible
  std::vector<int32_t> dep_pred_;  // the dependency that set ready_
  std::vector<int32_t> pred_;      // the task this one waited for: dependency or queue order
  std::vector<int32_t> queue_of_;
  std::vector<TimeNs> start_;
  std::vector<TimeNs> end_;
  std::vector<size_t> head_;  // per queue: position of the next task to run
  std::vector<uint8_t> busy_;
  std::vector<TimeNs> free_at_;
  MegakernelRun out_;
};

}  // namespace

std::string_view step_kind_name(StepKind kind) {
  switch (kind) {
    case StepKind::gap:
      return "gap";
    case StepKind::launch:
      return "launch";
    case StepKind::kernel:
      return "kernel";
    case StepKind::task:
      return "task";
    case StepKind::wait:
      return "wait";
    case StepKind::drain:
      return "drain";
  }
  return "?";
}

MegakernelRun simulate_megakernel(const model::Graph& graph, const model::Schedule& schedule,
                                  const TaskCosts& costs, const MegakernelParams& params) {
  if (params.bandwidth_bytes_per_ns <= 0) {
    throw Error("simulate_megakernel: device bandwidth must be positive");
  }
  return Run(graph, schedule, costs, params).run();
}

}  // namespace megacut::simulator
