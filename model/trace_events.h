// The pieces of a Chrome trace (open it in Perfetto or chrome://tracing), laid out like a
// measured Kineto trace: the simulator's trace of a predicted run (simulator/trace.h) and the
// profiler's measured one (megacut profile --trace) are made of these, so that the two have the
// same layout and argument names and compare side by side.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "model/profile.h"

namespace megacut::model {

// The trace as JSON text with one event per line: compact for large runs, and a diff of two
// traces (the golden test's) shows whole events.
std::string trace_text(const nlohmann::json& trace);

// Metadata events of process 0: its name, a thread's name and its place in the list.
nlohmann::json trace_process_name(const std::string& name);
nlohmann::json trace_thread_name(int tid, const std::string& name);
nlohmann::json trace_thread_order(int tid);
// A complete event (ph "X") from start_ns to end_ns, written in µs.
nlohmann::json trace_complete(std::string name, std::string_view category, int tid,
                              int64_t start_ns, int64_t end_ns, nlohmann::json args);
// Kineto's argument names for a kernel launched with `launch` on stream 0 of device 0.
nlohmann::json trace_kernel_args(const LaunchConfig& launch);

}  // namespace megacut::model
