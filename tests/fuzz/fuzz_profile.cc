// libFuzzer target: any bytes as a profile.json must read to a profile, or fail with a
// megacut::Error naming the field, and a profile that reads must simulate its all-conventional
// and one-megakernel-per-stage compositions at its first batch, or fail the same way: never an
// overflow into wrong times, a crash, a sanitizer report or another exception.
#include <cstddef>
#include <cstdint>

#include "model/composition.h"
#include "model/error.h"
#include "model/profile.h"
#include "simulator/simulator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace megacut;
  const auto json = nlohmann::json::parse(data, data + size, nullptr, false);
  if (json.is_discarded()) return 0;
  try {
    const model::Profile profile = model::profile_from_json(json, "fuzz/profile.json");
    const std::vector<int64_t> batches = profile.batch_sizes();
    // Small graphs only: a large model is read fine but simulated slowly.
    const auto small = [&](const char* field, int64_t most) {
      const auto v = profile.model_config.find(field);
      return v != profile.model_config.end() && v->is_number_integer() && v->get<int64_t>() <= most;
    };
    if (batches.empty() || batches.front() * profile.prompt_len > 64 ||
        !small("num_hidden_layers", 4) || !small("hidden_size", 512) ||
        !small("vocab_size", 4096)) {
      return 0;
    }
    simulator::Simulator sim(profile, {});
    const std::vector<model::StageShape> shapes = sim.stage_shapes(batches.front());
    for (model::RegionKind kind : {model::RegionKind::conv, model::RegionKind::mk}) {
      const simulator::Prediction p =
          sim.simulate(model::uniform_composition(shapes, kind), batches.front());
      if (p.ttfo_ns < 0 || p.decode_step_ns < 0) __builtin_trap();  // an overflow
    }
  } catch (const Error&) {
  }
  return 0;
}
