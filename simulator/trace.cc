#include "simulator/trace.h"

#include <string>

#include "model/error.h"

namespace megacut::simulator {
namespace {

using nlohmann::json;

constexpr int kPid = 0;
constexpr int kStreamTid = 0;
constexpr int kRegionTid = 1;
constexpr int kFirstSmTid = 2;

double us(TimeNs ns) { return static_cast<double>(ns) / 1000.0; }

json complete(std::string name, std::string_view cat, int tid, TimeNs start, TimeNs end,
              json args) {
  return {{"name", std::move(name)},
          {"cat", cat},
          {"ph", "X"},
          {"pid", kPid},
          {"tid", tid},
          {"ts", us(start)},
          {"dur", us(end - start)},
          {"args", std::move(args)}};
}

json thread_name(int tid, const std::string& name) {
  return {{"name", "thread_name"},
          {"ph", "M"},
          {"pid", kPid},
          {"tid", tid},
          {"args", {{"name", name}}}};
}

json thread_order(int tid) {
  return {{"name", "thread_sort_index"},
          {"ph", "M"},
          {"pid", kPid},
          {"tid", tid},
          {"args", {{"sort_index", tid}}}};
}

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
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", kPid},
                    {"args", {{"name", "GPU 0 (simulated " + p.device + ")"}}}});
  events.push_back(thread_name(kStreamTid, "stream 0"));
  events.push_back(thread_order(kStreamTid));
  events.push_back(thread_name(kRegionTid, "stages and regions"));
  events.push_back(thread_order(kRegionTid));
  for (int sm = 0; sm < p.sm_count; ++sm) {
    events.push_back(thread_name(kFirstSmTid + sm, "SM " + std::to_string(sm)));
    events.push_back(thread_order(kFirstSmTid + sm));
  }

  TimeNs stage_start = 0;
  for (const StagePrediction& s : p.stages) {
    const model::Graph& g = sim.graph(s.stage, p.batch);
    const StageProfile& prof = sim.stage_profile(s.stage, p.batch);
    events.push_back(complete(s.stage, "stage", kRegionTid, stage_start, stage_start + s.time_ns,
                              {{"batch", p.batch}, {"composition", p.composition}}));
    for (size_t i = 0; i < s.regions.size(); ++i) {
      const RegionResult& r = *s.regions[i];
      const TimeNs at = stage_start + s.region_start_ns[i];
      events.push_back(complete(region_name(r.region), "region", kRegionTid, at, at + r.time_ns,
                                {{"gap_ns", r.gap_ns},
                                 {"launch_ns", r.launch_ns},
                                 {"work_ns", r.work_ns},
                                 {"drain_ns", r.drain_ns},
                                 {"tasks", r.tasks}}));
      if (r.region.kind == model::RegionKind::mk) {
        // The persistent kernel, as Kineto would show it on its stream.
        events.push_back(complete(
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
          events.push_back(complete(
              op.name, "task", kFirstSmTid + span.lane, at + span.start_ns, at + span.end_ns,
              {{"op", span.op}, {"tile", span.tile}, {"kind", op.kind->name()}}));
        }
      } else {
        for (const Span& span : r.spans) {
          const ConvKernel& k = *prof.op(span.op)->conv;
          events.push_back(complete(k.kernel, "kernel", kStreamTid, at + span.start_ns,
                                    at + span.end_ns,
                                    {{"device", 0},
                                     {"stream", 0},
                                     {"grid", k.launch.grid},
                                     {"block", k.launch.block},
                                     {"registers per thread", k.launch.registers},
                                     {"shared memory", k.launch.smem_bytes},
                                     {"op", g.op(span.op).name},
                                     {"provider", k.provider}}));
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

std::string trace_text(const json& trace) {
  std::string text = "{";
  for (const auto& [key, value] : trace.items()) {
    if (key == "traceEvents") continue;
    text += json(key).dump() + ": " + value.dump() + ",\n";
  }
  text += "\"traceEvents\": [";
  const json& events = trace.at("traceEvents");
  for (size_t i = 0; i < events.size(); ++i) {
    text += (i == 0 ? "\n" : ",\n") + events[i].dump();
  }
  text += "\n]}\n";
  return text;
}

}  // namespace megacut::simulator
