// The simulated run as a Chrome trace (open it in Perfetto or chrome://tracing), laid out like
// a measured Kineto trace so the two compare side by side: `traceEvents` of complete events
// (ph "X", ts and dur in µs), one thread per stream for kernels, one per SM for the tasks of
// mk regions, and one for stages and regions. Stages follow one another on the time axis in
// scenario order.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "simulator/prediction.h"
#include "simulator/simulator.h"

namespace megacut::simulator {

// `simulator` must be the one that made `prediction`, with SimOptions::record_spans set.
nlohmann::json chrome_trace(const Prediction& prediction, Simulator& simulator);

// The trace as JSON text with one event per line: compact for large runs, and a diff of two
// traces (the golden test's) shows whole events.
std::string trace_text(const nlohmann::json& trace);

// The pieces both traces are made of, so that the profiler's measured trace (megacut profile
// --trace) has the same layout and argument names as a simulated one.
nlohmann::json trace_process_name(const std::string& name);
nlohmann::json trace_thread_name(int tid, const std::string& name);
nlohmann::json trace_thread_order(int tid);
// A complete event (ph "X") from start_ns to end_ns, written in µs.
nlohmann::json trace_complete(std::string name, std::string_view category, int tid, TimeNs start_ns,
                              TimeNs end_ns, nlohmann::json args);
// Kineto's argument names for a kernel launched with `launch` on stream 0 of device 0.
nlohmann::json trace_kernel_args(const LaunchConfig& launch);

}  // namespace megacut::simulator
