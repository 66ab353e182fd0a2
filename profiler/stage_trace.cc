#include "profiler/stage_trace.h"

#include <algorithm>
#include <array>
#include <numeric>

#include "model/error.h"
#include "model/stats.h"
#include "model/trace_events.h"

namespace megacut::profiler {
namespace {

constexpr int kStreamTid = 0;  // the first stream; as in the simulated trace
constexpr int kStageTid = 1;
constexpr int kMoreStreamsTid = 2;

void sort_by_start(std::vector<KernelRecord>& kernels) {
  std::stable_sort(
      kernels.begin(), kernels.end(),
      [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
}

std::string dims_text(const std::array<int64_t, 3>& d) {
  return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) +
         ")";
}

std::string kernel_text(const KernelRecord& k) {
  return k.name + " grid " + dims_text(k.launch.grid) + " block " + dims_text(k.launch.block);
}

double ns_between(uint64_t from, uint64_t to) {
  return static_cast<double>(static_cast<int64_t>(to - from));
}

}  // namespace

uint64_t Tag::code() const {
  return (uint64_t{static_cast<uint8_t>(kind)} << 56) |
         (uint64_t{static_cast<uint16_t>(stage)} << 32) | uint64_t{static_cast<uint32_t>(index)};
}

Tag Tag::decode(uint64_t code) {
  return Tag{static_cast<TagKind>(code >> 56), static_cast<int>((code >> 32) & 0xffff),
             static_cast<int>(code & 0xffffffff)};
}

const std::vector<KernelRecord>& TaggedKernels::of(Tag tag) const {
  static const std::vector<KernelRecord> kNone;
  const auto it = by_tag.find(tag.code());
  return it == by_tag.end() ? kNone : it->second;
}

TaggedKernels group_by_tag(const TraceWindow& window) {
  TaggedKernels out;
  for (const KernelRecord& k : window.kernels) {
    const auto it = window.tag_of_call.find(k.correlation);
    if (it == window.tag_of_call.end()) {
      out.untagged.push_back(k);
    } else {
      out.by_tag[it->second].push_back(k);
    }
  }
  for (auto& [tag, kernels] : out.by_tag) sort_by_start(kernels);
  sort_by_start(out.untagged);
  return out;
}

StageTrace map_stage(const StageOps& stage, const std::vector<std::vector<KernelRecord>>& eager,
                     std::vector<std::vector<KernelRecord>> replays, bool pdl) {
  const std::string where = "stage " + stage.stage;
  const int op_count = static_cast<int>(stage.ops.size());
  if (static_cast<int>(eager.size()) != op_count) {
    throw Error(where + ": eager kernels of " + std::to_string(eager.size()) +
                " ops, the stage has " + std::to_string(op_count));
  }
  if (replays.empty()) throw Error(where + ": no traced replay");

  // The expected sequence: each op's eager kernels, op after op.
  std::vector<KernelRecord> expected;
  StageTrace out;
  std::vector<int> first(op_count), last(op_count);
  for (int op = 0; op < op_count; ++op) {
    std::vector<KernelRecord> kernels = eager[op];
    if (kernels.empty()) {
      throw Error(where + ": op " + std::to_string(op) + " (" + stage.ops[op].name +
                  ") launched no kernel in its eager run");
    }
    sort_by_start(kernels);
    first[op] = static_cast<int>(expected.size());
    for (KernelRecord& k : kernels) {
      expected.push_back(std::move(k));
      out.op_of_position.push_back(op);
    }
    last[op] = static_cast<int>(expected.size()) - 1;
  }

  for (size_t r = 0; r < replays.size(); ++r) {
    std::vector<KernelRecord>& replay = replays[r];
    sort_by_start(replay);
    const std::string at = where + ", replay " + std::to_string(r);
    if (replay.size() != expected.size()) {
      throw Error(at + ": " + std::to_string(replay.size()) + " kernels, expected " +
                  std::to_string(expected.size()) + " (the eager run's, op by op)");
    }
    for (size_t p = 0; p < replay.size(); ++p) {
      const KernelRecord& k = replay[p];
      const KernelRecord& e = expected[p];
      const int op = out.op_of_position[p];
      const std::string here = at + ", kernel " + std::to_string(p) + " (op " + std::to_string(op) +
                               " " + stage.ops[op].name + ")";
      if (k.name != e.name || k.launch.grid != e.launch.grid || k.launch.block != e.launch.block) {
        throw Error(here + ": ran " + kernel_text(k) + ", the eager run " + kernel_text(e));
      }
      if (k.end_ns <= k.start_ns) {
        throw Error(here + ": " + k.name + " has no positive duration (start " +
                    std::to_string(k.start_ns) + ", end " + std::to_string(k.end_ns) + ")");
      }
      if (p > 0 && k.start_ns < replay[p - 1].end_ns) {
        const uint64_t overlap_ns = replay[p - 1].end_ns - k.start_ns;
        if (overlap_ns > kOverlapToleranceNs && !pdl) {
          throw Error(here + ": starts " + std::to_string(overlap_ns) +
                      " ns before the previous kernel ends; a stage graph captured from one "
                      "stream runs its kernels one after the other");
        }
        out.max_overlap_ns = std::max(out.max_overlap_ns, overlap_ns);
      }
      if (r > 0 && k.graph_node != replays[0][p].graph_node) {
        throw Error(here + ": graph node " + std::to_string(k.graph_node) + ", replay 0 had " +
                    std::to_string(replays[0][p].graph_node) + " at this position");
      }
    }
  }

  out.profile.stage = stage.stage;
  for (int op = 0; op < op_count; ++op) {
    std::vector<double> durations, gaps, steps;
    const bool stepped =
        pdl && op > 0 && stage.ops[op].provider == "ours" && stage.ops[op - 1].provider == "ours";
    for (const std::vector<KernelRecord>& replay : replays) {
      durations.push_back(ns_between(replay[first[op]].start_ns, replay[last[op]].end_ns));
      if (stepped) {
        steps.push_back(
            std::max(0.0, ns_between(replay[last[op - 1]].end_ns, replay[last[op]].end_ns)));
      }
      if (op + 1 < op_count) {
        const double gap_ns = ns_between(replay[last[op]].end_ns, replay[first[op + 1]].start_ns);
        if (gap_ns < 0) ++out.clamped_gaps;
        gaps.push_back(std::max(0.0, gap_ns));
      }
    }
    // The launch configuration of the op's longest kernel (its only one, but for cuBLASLt's).
    int main_position = first[op];
    double main_ns = -1;
    std::string name;
    for (int p = first[op]; p <= last[op]; ++p) {
      double total_ns = 0;
      for (const std::vector<KernelRecord>& replay : replays) {
        total_ns += ns_between(replay[p].start_ns, replay[p].end_ns);
      }
      if (total_ns > main_ns) main_ns = total_ns, main_position = p;
      name += (p == first[op] ? "" : " + ") + expected[p].name;
    }
    model::OpProfile o;
    o.index = op;
    o.name = stage.ops[op].name;
    o.kind = stage.ops[op].kind;
    model::ConvKernel k;
    k.kernel = name;
    k.provider = stage.ops[op].provider;
    k.duration_ns = model::compute_stats(durations, "ns");
    if (!gaps.empty()) k.gap_to_next_ns = model::compute_stats(gaps, "ns");
    if (!steps.empty()) k.pdl_step_ns = model::compute_stats(steps, "ns");
    k.launch = expected[main_position].launch;
    o.conv = std::move(k);
    out.profile.ops.push_back(std::move(o));
  }
  out.replays = std::move(replays);
  return out;
}

model::LatencyStats StageTrace::span_ns() const {
  std::vector<double> spans;
  for (const std::vector<KernelRecord>& replay : replays) {
    spans.push_back(ns_between(replay.front().start_ns, replay.back().end_ns));
  }
  return model::compute_stats(spans, "ns");
}

int median_iteration(const std::vector<StageTrace>& stages) {
  if (stages.empty()) throw Error("median iteration: no stages");
  const size_t runs = stages.front().replays.size();
  for (const StageTrace& s : stages) {
    if (s.replays.size() != runs) throw Error("median iteration: stages have different replays");
  }
  std::vector<double> totals(runs, 0);
  for (const StageTrace& s : stages) {
    for (size_t i = 0; i < runs; ++i) {
      totals[i] += ns_between(s.replays[i].front().start_ns, s.replays[i].back().end_ns);
    }
  }
  std::vector<int> order(runs);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return totals[a] < totals[b]; });
  return order[(runs - 1) / 2];
}

nlohmann::json measured_trace(const std::vector<StageTrace>& stages,
                              const std::vector<StageOps>& ops, int iteration,
                              const std::vector<int64_t>& lead_ns,
                              const nlohmann::json& other_data) {
  using nlohmann::json;
  if (stages.size() != ops.size() || stages.size() != lead_ns.size()) {
    throw Error("measured trace: stages, ops and leads differ in count");
  }
  json events = json::array();
  const std::string device =
      other_data.contains("device") ? other_data.at("device").get<std::string>() : "GPU";
  events.push_back(model::trace_process_name("GPU 0 (measured " + device + ")"));
  events.push_back(model::trace_thread_name(kStageTid, "stages and regions"));
  events.push_back(model::trace_thread_order(kStageTid));

  std::map<uint32_t, int> tid_of_stream;
  auto stream_tid = [&](uint32_t stream) {
    const auto [it, fresh] = tid_of_stream.try_emplace(
        stream, tid_of_stream.empty()
                    ? kStreamTid
                    : kMoreStreamsTid + static_cast<int>(tid_of_stream.size()) - 1);
    if (fresh) {
      events.push_back(model::trace_thread_name(it->second, "stream " + std::to_string(stream)));
      events.push_back(model::trace_thread_order(it->second));
    }
    return it->second;
  };

  int64_t offset = 0;
  for (size_t s = 0; s < stages.size(); ++s) {
    const StageTrace& st = stages[s];
    if (iteration < 0 || iteration >= static_cast<int>(st.replays.size())) {
      throw Error("measured trace: no replay " + std::to_string(iteration) + " of stage " +
                  st.profile.stage);
    }
    const std::vector<KernelRecord>& replay = st.replays[iteration];
    const uint64_t first_ns = replay.front().start_ns;
    auto at = [&](uint64_t t) { return offset + lead_ns[s] + static_cast<int64_t>(t - first_ns); };
    const int64_t end = at(replay.back().end_ns);
    events.push_back(model::trace_complete(
        st.profile.stage, "stage", kStageTid, offset, end,
        {{"replay", iteration}, {"kernels", replay.size()}, {"launch_lead_ns", lead_ns[s]}}));
    for (size_t p = 0; p < replay.size(); ++p) {
      const KernelRecord& k = replay[p];
      const int op = st.op_of_position.at(p);
      json args = model::trace_kernel_args(k.launch);
      args["stream"] = k.stream;
      args["op"] = ops[s].ops.at(op).name;
      args["op index"] = op;
      args["stage"] = st.profile.stage;
      args["provider"] = ops[s].ops.at(op).provider;
      args["correlation"] = k.correlation;
      args["graph node"] = k.graph_node;
      events.push_back(model::trace_complete(k.name, "kernel", stream_tid(k.stream), at(k.start_ns),
                                             at(k.end_ns), std::move(args)));
    }
    offset = end;
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ns"}, {"otherData", other_data}};
}

}  // namespace megacut::profiler
