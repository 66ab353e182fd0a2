// The simulated run as a Chrome trace (open it in Perfetto or chrome://tracing), laid out like
// a measured Kineto trace so the two compare side by side (model/trace_events.h has the pieces
// both are made of): `traceEvents` of complete events (ph "X", ts and dur in µs), one thread per
// stream for kernels, one per SM for the tasks of mk regions, and one for stages and regions.
// Stages follow one another on the time axis in scenario order.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "simulator/prediction.h"
#include "simulator/simulator.h"

namespace megacut::simulator {

// `simulator` must be the one that made `prediction`, with SimOptions::record_spans set.
nlohmann::json chrome_trace(const Prediction& prediction, Simulator& simulator);

}  // namespace megacut::simulator
