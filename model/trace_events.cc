#include "model/trace_events.h"

#include <string>

namespace megacut::model {
namespace {

using nlohmann::json;

constexpr int kPid = 0;

}  // namespace

json trace_process_name(const std::string& name) {
  return {{"name", "process_name"}, {"ph", "M"}, {"pid", kPid}, {"args", {{"name", name}}}};
}

json trace_thread_name(int tid, const std::string& name) {
  return {{"name", "thread_name"},
          {"ph", "M"},
          {"pid", kPid},
          {"tid", tid},
          {"args", {{"name", name}}}};
}

json trace_thread_order(int tid) {
  return {{"name", "thread_sort_index"},
          {"ph", "M"},
          {"pid", kPid},
          {"tid", tid},
          {"args", {{"sort_index", tid}}}};
}

json trace_complete(std::string name, std::string_view category, int tid, int64_t start_ns,
                    int64_t end_ns, json args) {
  return {{"name", std::move(name)},
          {"cat", category},
          {"ph", "X"},
          {"pid", kPid},
          {"tid", tid},
          {"ts", static_cast<double>(start_ns) / 1000.0},
          {"dur", static_cast<double>(end_ns - start_ns) / 1000.0},
          {"args", std::move(args)}};
}

json trace_kernel_args(const LaunchConfig& launch) {
  return {{"device", 0},
          {"stream", 0},
          {"grid", launch.grid},
          {"block", launch.block},
          {"registers per thread", launch.registers},
          {"shared memory", launch.smem_bytes}};
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

}  // namespace megacut::model
