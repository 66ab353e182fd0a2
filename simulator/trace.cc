#include "simulator/trace.h"

#include <string>

#include "model/error.h"
#include "model/trace_events.h"

namespace megacut::simulator {
namespace {

using model::trace_complete;
using model::trace_kernel_args;
using model::trace_process_name;
using model::trace_thread_name;
using model::trace_thread_order;
using nlohmann::json;

constexpr int kStreamTid = 0;
constexpr int kRegionTid = 1;
constexpr int kFirstSmTid = 2;

std::string region_name(const model::Region& r) {
  return std::string(model::region_kind_name(r.kind)) + "[" + std::to_string(r.begin) + ":" +
         std::to_string(r.end) + "]";
}

}  // namespace

json chrome_trace(const Prediction& p, Simulator& sim) {
  if (!sim.options().record_spans) {
    throw Error("chrome trace: the simulator was not asked to record spans (record_spans)");
  }
  json events = json::array();
  events.push_back(trace_process_name("GPU 0 (simulated " + p.device + ")"));
  events.push_back(trace_thread_name(kStreamTid, "stream 0"));
  events.push_back(trace_thread_order(kStreamTid));
  events.push_back(trace_thread_name(kRegionTid, "stages and regions"));
  events.push_back(trace_thread_order(kRegionTid));
  for (int sm = 0; sm < p.sm_count; ++sm) {
    events.push_back(trace_thread_name(kFirstSmTid + sm, "SM " + std::to_string(sm)));
    events.push_back(trace_thread_order(kFirstSmTid + sm));
  }

  TimeNs stage_start = 0;
  for (const StagePrediction& s : p.stages) {
    const model::Graph& g = sim.graph(s.stage, p.batch);
    const model::StageProfile& prof = sim.stage_profile(s.stage, p.batch);
    events.push_back(trace_complete(s.stage, "stage", kRegionTid, stage_start,
                                    stage_start + s.time_ns,
                                    {{"batch", p.batch}, {"composition", p.composition}}));
    for (size_t i = 0; i < s.regions.size(); ++i) {
      const RegionResult& r = *s.regions[i];
      const TimeNs at = stage_start + s.region_start_ns[i];
      events.push_back(trace_complete(region_name(r.region), "region", kRegionTid, at,
                                      at + r.time_ns,
                                      {{"gap_ns", r.gap_ns},
                                       {"launch_ns", r.launch_ns},
                                       {"work_ns", r.work_ns},
                                       {"drain_ns", r.drain_ns},
                                       {"tasks", r.tasks}}));
      if (r.region.kind == model::RegionKind::mk) {
        // The persistent kernel, as Kineto would show it on its stream.
        events.push_back(trace_complete(
            "megacut_region_" + region_name(r.region), "kernel", kStreamTid, at + r.gap_ns,
            at + r.time_ns,
            {{"device", 0},
             {"stream", 0},
             {"grid", {p.sm_count, 1, 1}},
             {"block", {r.config->threads, 1, 1}},
             {"registers per thread", r.config->registers},
             {"shared memory", r.config->smem_bytes},
             {"ops", std::to_string(r.region.begin) + ":" + std::to_string(r.region.end)}}));
        for (const Span& span : r.spans) {
          const model::Op& op = g.op(span.op);
          events.push_back(trace_complete(
              op.name, "task", kFirstSmTid + span.lane, at + span.start_ns, at + span.end_ns,
              {{"op", span.op}, {"tile", span.tile}, {"kind", op.kind->name()}}));
        }
      } else {
        for (const Span& span : r.spans) {
          const model::ConvKernel& k = *prof.op(span.op)->conv;
          json args = trace_kernel_args(k.launch);
          args["op"] = g.op(span.op).name;
          args["provider"] = k.provider;
          events.push_back(trace_complete(k.kernel, "kernel", kStreamTid, at + span.start_ns,
                                          at + span.end_ns, std::move(args)));
        }
      }
    }
    stage_start += s.time_ns;
  }
  return {{"traceEvents", events},
          {"displayTimeUnit", "ns"},
          {"otherData",
           {{"generator", "megacut simulate"},
            {"model", p.model},
            {"batch", p.batch},
            {"composition", p.composition}}}};
}

}  // namespace megacut::simulator
