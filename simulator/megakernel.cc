#include "simulator/megakernel.h"

#include <algorithm>
#include <cassert>
#include <type_traits>

#include "model/error.h"

namespace megacut::simulator {
namespace {

enum Phase : int64_t { kStart = 0, kMoved = 1, kEnd = 2, kAhead = 3 };

// Where a task's bytes are: none moving yet; its ahead part moving, or through before the task
// started; the rest started (after the ahead part, if any).
enum Stream : int8_t { kIdle = 0, kAheadMoving = 1, kAheadDone = 2, kRest = 3 };

// The region's state; per-task arrays are indexed by task id minus the first task id. Queue q
// runs schedule.queues[q] up to (not including) position queue_end_[q].
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
        bandwidth_(params.bandwidth_bytes_per_ns),
        link_(params.link_bytes_per_ns > 0 ? params.link_bytes_per_ns : 1),
        links_(!costs.link_bytes.empty()) {
    const size_t n = static_cast<size_t>(last_ - first_);
    if (costs.fixed_ns.size() != n || costs.bytes.size() != n ||
        (links_ && costs.link_bytes.size() != n) ||
        (!costs.ahead_bytes.empty() && costs.ahead_bytes.size() != n)) {
      throw Error("simulate_megakernel: task costs do not match the region's task count");
    }
    for (size_t j = 0; j < costs.ahead_bytes.size(); ++j) {
      if (!(costs.ahead_bytes[j] >= 0 && costs.ahead_bytes[j] <= costs.bytes[j])) {
        throw Error("simulate_megakernel: task " + std::to_string(first_ + j) +
                    " loads more bytes ahead than it moves");
      }
    }
    if (links_ && !(params.link_bytes_per_ns > 0)) {
      throw Error(
          "simulate_megakernel: tasks send link bytes, but the link bandwidth is not "
          "positive");
    }
    pending_.assign(n, 0);
    moving_.assign(n, 0);
    stream_.assign(n, kIdle);
    ready_.assign(n, 0);
    dep_pred_.assign(n, -1);
    pred_.assign(n, -1);
    queue_of_.assign(n, -1);
    start_.assign(n, -1);
    end_.assign(n, -1);
    const int queues = schedule.queue_count();
    head_.assign(queues, 0);
    queue_end_.resize(queues);
    busy_.assign(queues, 0);
    free_at_.assign(queues, 0);
    out_.lane_busy_ns.assign(queues, 0);
    for (int q = 0; q < queues; ++q) {
      queue_end_[q] = schedule.queues[q].size();
      for (model::TaskId id : schedule.queues[q]) {
        assert(id >= first_ && id < last_ && queue_of_[id - first_] == -1);
        queue_of_[id - first_] = q;
      }
    }
    for (model::TaskId id = first_; id < last_; ++id) {
      if (queue_of_[id - first_] < 0) {
        throw Error("simulate_megakernel: task " + std::to_string(id) + " is on no queue");
      }
      // Its dependencies inside the region: an op it needs whole (one entry of
      // Graph::dep_entries) counts each of its tasks, as finish() signals them.
      int64_t pending = 0;
      for (const int64_t entry : graph.dep_entries(id)) {
        if (entry >= 0) {
          pending += entry >= first_ ? 1 : 0;
        } else if (const int op = static_cast<int>(-entry - 1); graph.first_task(op) >= first_) {
          pending += graph.first_task(op + 1) - graph.first_task(op);
        }
      }
      pending_[id - first_] = static_cast<int32_t>(pending);
    }
    words_from_.assign(static_cast<size_t>(schedule.op_end - schedule.op_begin), -1);
    // Those past the region's end are a longer region's (one cut short keeps its costs).
    for (const model::DataEdge& e : costs.by_data) {
      if (e.producer < schedule.op_begin || e.consumer <= e.producer) {
        throw Error("simulate_megakernel: a hop by data from op " + std::to_string(e.producer) +
                    " to op " + std::to_string(e.consumer) + " is not forward within the region");
      }
      if (e.consumer < schedule.op_end) words_from_[e.consumer - schedule.op_begin] = e.producer;
    }
    if (params.record_spans) out_.spans.reserve(n);
  }

  // Continues `parent` as the region of its tasks [first, last) alone: every parent task
  // before `first` has ended, the latest at `ended_ns`, and none from `last` on has started or
  // begun to load ahead.
  // Only the makespan is kept (no critical path, spans or lane times).
  Run(const Run& parent, model::TaskId first, model::TaskId last, TimeNs ended_ns)
      : graph_(parent.graph_),
        schedule_(parent.schedule_),
        costs_(parent.costs_),
        params_(parent.params_),
        first_(first),
        last_(last),
        cost_offset_(parent.cost_offset_ + (first - parent.first_)),
        bandwidth_(parent.bandwidth_.bytes_per_ns()),
        link_(parent.link_.bytes_per_ns()),
        links_(parent.links_),
        ended_ns_(ended_ns) {
    const auto a = static_cast<std::ptrdiff_t>(first - parent.first_);
    const auto b = static_cast<std::ptrdiff_t>(last - parent.first_);
    auto slice = [&](const auto& v) {
      return std::decay_t<decltype(v)>(v.begin() + a, v.begin() + b);
    };
    words_from_ = parent.words_from_;
    pending_ = slice(parent.pending_);
    moving_ = slice(parent.moving_);
    stream_ = slice(parent.stream_);
    ready_ = slice(parent.ready_);
    queue_of_ = slice(parent.queue_of_);
    start_ = slice(parent.start_);
    end_ = slice(parent.end_);
    dep_pred_.assign(b - a, -1);
    pred_.assign(b - a, -1);
    const int queues = schedule_.queue_count();
    head_ = parent.head_;
    queue_end_.resize(queues);
    busy_.assign(queues, 0);
    free_at_ = parent.free_at_;
    out_.lane_busy_ns.assign(queues, 0);
    for (int q = 0; q < queues; ++q) {
      const std::vector<model::TaskId>& tasks = schedule_.queues[q];
      queue_end_[q] = std::lower_bound(
                          tasks.begin() + static_cast<std::ptrdiff_t>(head_[q]),
                          tasks.begin() + static_cast<std::ptrdiff_t>(parent.queue_end_[q]), last) -
                      tasks.begin();
      // A queue whose next task is a later op's has nothing left here.
      if (head_[q] < queue_end_[q]) busy_[q] = parent.busy_[q];
    }
    engine_.copy_from(parent.engine_, [&](EventHandler*& handler, int64_t& payload) {
      const int64_t j = payload >> 2;
      handler = this;
      payload -= a << 2;
      return j >= a && j < b;
    });
    // Transfers in progress are of tasks started or loading ahead, and not ended: all in
    // [first, last).
    bandwidth_.copy_from(parent.bandwidth_, this, a << 2);
    link_.copy_from(parent.link_, this, a << 2);
  }

  // Runs the rest of a continued region; its makespan.
  TimeNs finish_continued() {
    add_resources();
    engine_.run();
    TimeNs makespan = ended_ns_;
    for (size_t j = 0; j < end_.size(); ++j) {
      if (end_[j] < 0) {
        throw Error("simulate_megakernel: task " + std::to_string(first_ + j) +
                    " never ran: the schedule waits on a task placed later in its queue");
      }
      makespan = std::max(makespan, end_[j]);
    }
    return makespan;
  }

  // Runs the whole region, and each shorter region of `ends` as the run passes its end.
  PrefixMakespans run_prefixes(std::span<const int> ends, const PrefixFilter& filter) {
    PrefixMakespans out;
    out.makespan_ns.assign(ends.size(), -1);
    ends_ = ends;
    filter_ = &filter;
    prefixes_ = &out;
    const TimeNs makespan = run().makespan_ns;
    prefixes_ = nullptr;
    out.tasks += std::count_if(start_.begin(), start_.end(), [](TimeNs t) { return t >= 0; });
    if (stopped_) return out;
    for (size_t i = next_end_; i < ends.size(); ++i) {
      if (out.makespan_ns[i] >= 0) continue;
      // The region's end, or an op none of whose tasks started before the run ended (none
      // does, but the answer would be this).
      const model::TaskId hi = graph_.first_task(ends[i]);
      out.makespan_ns[i] = ends[i] == schedule_.op_end
                               ? makespan
                               : *std::max_element(end_.begin(), end_.begin() + (hi - first_));
    }
    return out;
  }

  MegakernelRun run() {
    add_resources();
    for (int q = 0; q < schedule_.queue_count(); ++q) {
      if (schedule_.queues[q].empty()) continue;
      queue_free(schedule_.queues[q][0] - first_, 0);
      try_start(schedule_.queues[q][0] - first_);
    }
    engine_.run();
    if (stopped_) return std::move(out_);
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
    if (stopped_) return;  // let the engine drain
    const int64_t j = payload >> 2;
    switch (payload & 3) {
      case kAhead:
        if (prefixes_ != nullptr) {
          finish_prefixes(first_ + j, now);
          if (stopped_) return;
        }
        stream_[j] = kAheadMoving;
        bandwidth_.start(now, ahead(j), this, (j << 2) | kMoved);
        ++moving_[j];
        break;
      case kStart:
        if (prefixes_ != nullptr) {
          finish_prefixes(first_ + j, now);
          if (stopped_) return;
        }
        start_[j] = now;
        // The rest of its bytes follow the ahead part still moving.
        if (stream_[j] != kAheadMoving) move_rest(j, now);
        break;
      case kMoved:
        if (--moving_[j] > 0) break;
        if (stream_[j] == kAheadMoving) {
          if (start_[j] < 0) {
            stream_[j] = kAheadDone;
          } else {
            move_rest(j, now);
          }
          break;
        }
        engine_.schedule(add_time(now, costs_.fixed_ns[j + cost_offset_]), this, (j << 2) | kEnd);
        break;
      case kEnd:
        finish(j, now);
        break;
    }
  }

 private:
  // The device's bandwidth, then (only where some task sends link bytes, so that other regions
  // run event for event as before) the links'.
  void add_resources() {
    engine_.add_resource(&bandwidth_);
    if (links_) engine_.add_resource(&link_);
  }

  double ahead(int64_t j) const {
    return costs_.ahead_bytes.empty() ? 0.0 : costs_.ahead_bytes[j + cost_offset_];
  }

  // Task j's queue has reached it (the task before on it ended): its weight ring starts loading
  // what it loads ahead, as an event, so that a run of a shorter region continues from before it.
  void queue_free(int64_t j, TimeNs now) {
    if (ahead(j) > 0) engine_.schedule(now, this, (j << 2) | kAhead);
  }

  // Task j has started and what it loaded ahead is through: the rest of its device bytes and its
  // link bytes move at once, and its fixed time follows the later.
  void move_rest(int64_t j, TimeNs now) {
    stream_[j] = kRest;
    if (const double bytes = costs_.bytes[j + cost_offset_] - ahead(j); bytes > 0) {
      bandwidth_.start(now, bytes, this, (j << 2) | kMoved);
      ++moving_[j];
    }
    if (links_) {
      if (const double bytes = costs_.link_bytes[j + cost_offset_]; bytes > 0) {
        link_.start(now, bytes, this, (j << 2) | kMoved);
        ++moving_[j];
      }
    }
    if (moving_[j] == 0) {
      engine_.schedule(add_time(now, costs_.fixed_ns[j + cost_offset_]), this, (j << 2) | kEnd);
    }
  }

  // Queues task j's start if its queue has reached it, is idle, and its dependencies are met.
  void try_start(int64_t j) {
    const int q = queue_of_[j];
    if (busy_[q] || pending_[j] > 0) return;
    const auto& queue = schedule_.queues[q];
    if (head_[q] >= queue_end_[q] || queue[head_[q]] - first_ != j) return;
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
    assert(end_[j] < 0);  // one end a task: each of its transfers reported once
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
    const auto& queue = schedule_.queues[q];
    // Before the dependents: one of them may be the queue's next task, whose start must find its
    // ahead part on its way.
    if (head_[q] < queue_end_[q]) queue_free(queue[head_[q]] - first_, now);
    const model::TaskId id = first_ + j;
    const int own_op = graph_.task_op(id);
    for (auto [it, end] = boost::out_edges(static_cast<uint32_t>(id), graph_.tiles()); it != end;
         ++it) {
      const model::TaskId next = boost::target(*it, graph_.tiles());
      if (next >= last_) continue;
      const int64_t k = next - first_;
      TimeNs latency = 0;
      if (queue_of_[k] != q) {
        const bool by_words = words_from_[graph_.task_op(next) - schedule_.op_begin] == own_op;
        latency = by_words ? params_.word_latency_ns : params_.signal_latency_ns;
      }
      const TimeNs visible = now + latency;
      if (visible >= ready_[k]) {
        ready_[k] = visible;
        dep_pred_[k] = static_cast<int32_t>(j);
      }
      if (--pending_[k] == 0) try_start(k);
    }
    if (head_[q] < queue_end_[q]) try_start(queue[head_[q]] - first_);
  }

  // Task `id` is about to start or to load ahead. Each region of `ends_` that stops at or before
  // its op has run exactly as the whole one so far: continue it alone from a copy of this state.
  void finish_prefixes(model::TaskId id, TimeNs now) {
    while (next_end_ < ends_.size() && ends_[next_end_] < schedule_.op_end) {
      const model::TaskId hi = graph_.first_task(ends_[next_end_]);
      if (id < hi) return;
      const size_t limit = static_cast<size_t>(hi - first_);
      while (done_ < limit && end_[done_] >= 0) done_max_ = std::max(done_max_, end_[done_++]);
      // A task still running or waiting ends no earlier than now.
      const TimeNs floor = done_ < limit ? std::max(done_max_, now) : done_max_;
      const PrefixChoice choice = *filter_ ? (*filter_)(next_end_, now, floor) : PrefixChoice::run;
      if (choice == PrefixChoice::stop) {
        stopped_ = true;
        return;
      }
      if (choice != PrefixChoice::skip) {
        TimeNs makespan = done_max_;
        if (done_ < limit) {
          const model::TaskId lo = first_ + static_cast<model::TaskId>(done_);
          makespan = Run(*this, lo, hi, done_max_).finish_continued();
          prefixes_->tasks += hi - lo;
        }
        prefixes_->makespan_ns[next_end_] = makespan;
      }
      ++next_end_;
      if (choice == PrefixChoice::run_then_stop) {
        stopped_ = true;
        return;
      }
    }
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
  const int64_t cost_offset_ = 0;  // costs_ index of task first_
  Engine engine_;
  SharedBandwidth bandwidth_;
  SharedBandwidth link_;       // to the other GPUs (tensor parallel)
  const bool links_;           // some task sends link bytes
  const TimeNs ended_ns_ = 0;  // a continued region: when its tasks before first_ had ended

  // Regions ending early (run_prefixes): the ends, the next one to reach, the results; the
  // tasks before done_ have all ended, the latest at done_max_.
  std::span<const int> ends_;
  size_t next_end_ = 0;
  const PrefixFilter* filter_ = nullptr;
  PrefixMakespans* prefixes_ = nullptr;
  bool stopped_ = false;
  size_t done_ = 0;
  TimeNs done_max_ = 0;

  std::vector<int32_t> words_from_;  // per op of the region: the op it takes x from by words, or -1
  std::vector<int32_t> pending_;     // dependencies inside the region not yet signalled
  std::vector<int8_t> moving_;       // transfers of a task not yet through
  std::vector<int8_t> stream_;       // Stream: where its bytes are
  std::vector<TimeNs> ready_;        // when the last signalled dependency became visible
  std::vector<int32_t> dep_pred_;    // the dependency that set ready_
  std::vector<int32_t> pred_;        // the task this one waited for: dependency or queue order
  std::vector<int32_t> queue_of_;
  std::vector<TimeNs> start_;
  std::vector<TimeNs> end_;
  std::vector<size_t> head_;       // per queue: position of the next task to run
  std::vector<size_t> queue_end_;  // per queue: one past the last position this region runs
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

PrefixMakespans simulate_megakernel_prefixes(const model::Graph& graph,
                                             const model::Schedule& schedule,
                                             const TaskCosts& costs, const MegakernelParams& params,
                                             std::span<const int> ends,
                                             const PrefixFilter& filter) {
  if (params.bandwidth_bytes_per_ns <= 0) {
    throw Error("simulate_megakernel: device bandwidth must be positive");
  }
  for (size_t i = 0; i < ends.size(); ++i) {
    if (ends[i] <= schedule.op_begin || ends[i] > schedule.op_end ||
        (i > 0 && ends[i] <= ends[i - 1])) {
      throw Error("simulate_megakernel_prefixes: ends must increase within (" +
                  std::to_string(schedule.op_begin) + ", " + std::to_string(schedule.op_end) + "]");
    }
  }
  MegakernelParams quiet = params;
  quiet.record_spans = false;
  return Run(graph, schedule, costs, quiet).run_prefixes(ends, filter);
}

}  // namespace megacut::simulator
