#include "simulator/prediction.h"

#include "model/error.h"

namespace megacut::simulator {
namespace {

using nlohmann::json;

json step_json(const PathStep& s) {
  json j = {{"kind", step_kind_name(s.kind)},
            {"op", s.op},
            {"start_ns", s.start_ns},
            {"end_ns", s.end_ns}};
  if (s.tile >= 0) j["tile"] = s.tile;
  if (s.lane >= 0) j["sm"] = s.lane;
  return j;
}

json region_json(const RegionResult& r, TimeNs start_ns, int sm_count) {
  TimeNs busy = 0;
  for (TimeNs b : r.sm_busy_ns) busy += b;
  json j = {{"kind", model::region_kind_name(r.region.kind)},
            {"begin", r.region.begin},
            {"end", r.region.end},
            {"before", boundary_name(r.before)},
            {"start_ns", start_ns},
            {"time_ns", r.time_ns},
            {"gap_ns", r.gap_ns},
            {"launch_ns", r.launch_ns},
            {"work_ns", r.work_ns},
            {"drain_ns", r.drain_ns},
            {"kernels", r.kernels},
            {"tasks", r.tasks},
            {"sm_utilization",
             r.time_ns > 0 ? static_cast<double>(busy) / (static_cast<double>(r.time_ns) * sm_count)
                           : 0.0}};
  if (r.config) {
    j["config"] = {{"threads", r.config->threads},
                   {"registers", r.config->registers},
                   {"smem_bytes", r.config->smem_bytes},
                   {"predicted", true}};
    j["register_limited_ops"] = r.register_limited_ops;
  }
  return j;
}

}  // namespace

TimeNs StagePrediction::graph_launch_ns() const {
  TimeNs total = 0;
  for (const auto& r : regions) total += r->graph_launch_ns();
  return total;
}

TimeNs StagePrediction::trace_excess_ns() const {
  TimeNs total = 0;
  for (const auto& r : regions) total += r->trace_excess_ns();
  return total;
}

const StagePrediction& Prediction::stage(std::string_view name) const {
  for (const StagePrediction& s : stages) {
    if (s.stage == name) return s;
  }
  throw Error("prediction has no stage '" + std::string(name) + "'");
}

json prediction_to_json(const Prediction& p) {
  json stages = json::array();
  for (const StagePrediction& s : p.stages) {
    json regions = json::array();
    for (size_t i = 0; i < s.regions.size(); ++i) {
      regions.push_back(region_json(*s.regions[i], s.region_start_ns[i], p.sm_count));
    }
    json steps = json::array();
    for (const PathStep& step : s.critical_path) steps.push_back(step_json(step));
    json by_op = json::array();
    for (const OpOnPath& o : s.path_by_op) {
      by_op.push_back({{"op", o.op}, {"name", o.name}, {"time_ns", o.time_ns}, {"steps", o.steps}});
    }
    stages.push_back({{"stage", s.stage},
                      {"time_ns", s.time_ns},
                      {"runs_to_first_output", s.runs_to_first_output},
                      {"runs_per_step", s.runs_per_step},
                      {"graph_launch_ns", s.graph_launch_ns()},
                      {"trace_excess_ns", s.trace_excess_ns()},
                      {"measured_conv_graph_ns",
                       s.measured_conv_graph_ns ? json(*s.measured_conv_graph_ns) : json(nullptr)},
                      {"regions", regions},
                      {"critical_path",
                       {{"work_ns", s.path_work_ns},
                        {"overhead_ns", s.path_overhead_ns},
                        {"by_op", by_op},
                        {"steps", steps}}},
                      {"sm_utilization", s.sm_utilization}});
  }
  json interpolated = nullptr;
  if (p.interpolated) {
    interpolated = {{"batch", p.interpolated->batch},
                    {"lower", p.interpolated->lower},
                    {"upper", p.interpolated->upper}};
  }
  json doc = {{"schema", kPredictionSchema},
              {"model", p.model},
              {"device", p.device},
              {"sm_count", p.sm_count},
              {"batch", p.batch},
              {"prompt_len", p.prompt_len},
              {"composition", p.composition},
              {"linear_providers", model::provider_choice_to_json(p.providers)},
              {"ttfo_ns", p.ttfo_ns},
              {"decode_step_ns", p.decode_step_ns},
              {"throughput_per_s", p.throughput_per_s},
              {"output_unit", p.output_unit},
              {"interpolated", interpolated},
              {"notes", p.notes},
              {"stages", stages}};
  if (p.frames > 0) doc["frames"] = p.frames;
  if (p.tp > 1) doc["tp"] = p.tp;
  return doc;
}

}  // namespace megacut::simulator
