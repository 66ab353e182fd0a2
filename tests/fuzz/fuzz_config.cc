// libFuzzer target: any bytes as a config.json must parse to a config, or fail with a
// megacut::Error, and a config that parses must build a graph (tiny sizes only) or fail the
// same way. Anything else (a crash, a sanitizer report, another exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/config.h"
#include "model/decoder.h"
#include "model/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace megacut::model;
  const auto json = nlohmann::json::parse(data, data + size, nullptr, false);
  if (json.is_discarded()) return 0;
  try {
    ModelSpec spec;
    spec.decoder = parse_decoder_config(json, "fuzz/config.json");
    const DecoderConfig& c = spec.decoder;
    // Keep graphs small enough to build quickly; large sizes exercise only the parser.
    if (c.hidden_size * c.num_layers * (c.num_heads + c.intermediate_size / 64 + 1) > (1 << 16) ||
        c.vocab_size > 4096 || c.head_dim * c.num_heads > 4096 || c.max_position < 9) {
      return 0;
    }
    const Scenario s = make_scenario(spec, 2, 8);
    for (const std::string& stage : s.stage_names()) build_graph(spec, s, stage);
  } catch (const megacut::Error&) {
  }
  return 0;
}
