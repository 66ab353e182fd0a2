#include "model/scenario.h"

#include "model/error.h"

namespace megacut::model {

const Stage& Scenario::stage(std::string_view name) const {
  for (const Stage& s : stages) {
    if (s.name == name) return s;
  }
  std::string known;
  for (const Stage& s : stages) known += (known.empty() ? "" : ", ") + s.name;
  throw Error("unknown stage '" + std::string(name) + "' (stages: " + known + ")");
}

std::vector<std::string> Scenario::stage_names() const {
  std::vector<std::string> names;
  for (const Stage& s : stages) names.push_back(s.name);
  return names;
}

Scenario make_scenario(const ModelSpec& model, int64_t batch, int64_t prompt_len) {
  if (batch <= 0) throw Error("--batch: must be positive, got " + std::to_string(batch));
  if (prompt_len <= 0) {
    throw Error("--prompt-len: must be positive, got " + std::to_string(prompt_len));
  }
  if (prompt_len + 1 > model.decoder.max_position) {
    throw Error("--prompt-len: " + std::to_string(prompt_len) + " plus one decoded token exceeds " +
                model.config_path.string() + " max_position_embeddings " +
                std::to_string(model.decoder.max_position));
  }
  Scenario s;
  s.batch = batch;
  s.prompt_len = prompt_len;
  s.stages.push_back(Stage{"prefill", prompt_len, 0, 1, 0});
  s.stages.push_back(Stage{"decode", 1, prompt_len, 0, 1});
  return s;
}

}  // namespace megacut::model
