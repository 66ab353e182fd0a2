#include "model/scenario.h"

#include <algorithm>
#include <utility>

#include "model/batch_list.h"
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

std::vector<std::string> stage_sequence(const Scenario& scenario, Sequence sequence) {
  const bool first = sequence == Sequence::first_output;
  auto runs = [&](const Stage& s) { return first ? s.runs_to_first_output : s.runs_per_step; };
  std::vector<std::string> order;
  if (scenario.frames == 0) {
    for (const Stage& s : scenario.stages) order.insert(order.end(), runs(s), s.name);
    return order;
  }
  // prefill, decode, [code-predictor], decoder: the frame loop interleaves the middle stages.
  const Stage& prefill = scenario.stages.front();
  const Stage& decoder = scenario.stages.back();
  order.insert(order.end(), runs(prefill), prefill.name);
  for (int64_t frame = 0; frame < scenario.frames; ++frame) {
    for (size_t i = 1; i + 1 < scenario.stages.size(); ++i) {
      const Stage& s = scenario.stages[i];
      // Each frame runs its share; the talker's first-output runs skip the first frame.
      const int64_t per_frame = runs(s) / scenario.frames;
      const int64_t extra = runs(s) % scenario.frames;
      const int64_t here = per_frame + (frame >= scenario.frames - extra ? 1 : 0);
      order.insert(order.end(), here, s.name);
    }
  }
  order.insert(order.end(), runs(decoder), decoder.name);
  return order;
}

int64_t cache_positions(const ModelSpec& model, int64_t prompt_len, int64_t frames) {
  if (model.tts && frames == 0) frames = kDefaultFrames;
  return prompt_len + std::max<int64_t>(frames - 1, 1);
}

std::string gpu_count_text(int64_t tp) {
  return tp == 1 ? std::string("one GPU") : std::to_string(tp) + " GPUs";
}

std::string tensor_parallel_problem(const ModelSpec& model, int64_t tp) {
  if (tp < 1 || tp > kMaxTp) {
    return std::to_string(tp) + " is not a tensor-parallel degree megacut models (1 to " +
           std::to_string(kMaxTp) + ")";
  }
  if (tp == 1) return {};
  if (model.tts) return model.name + " is a TTS pipeline; tensor parallel slices LLMs only";
  // Megatron slicing divides these by the degree (model/decoder.cc).
  const DecoderConfig& c = model.decoder;
  const std::pair<const char*, int64_t> sliced[] = {{"num_attention_heads", c.num_heads},
                                                    {"num_key_value_heads", c.num_kv_heads},
                                                    {"intermediate_size", c.intermediate_size},
                                                    {"vocab_size", c.vocab_size}};
  for (const auto& [field, value] : sliced) {
    if (value % tp != 0) {
      return model.config_path.string() + " " + field + " " + std::to_string(value) +
             " does not divide by " + std::to_string(tp) + " GPUs";
    }
  }
  return {};
}

Scenario make_scenario(const ModelSpec& model, int64_t batch, int64_t prompt_len, int64_t frames,
                       int64_t tp) {
  if (std::string problem = tensor_parallel_problem(model, tp); !problem.empty()) {
    throw Error("--tp: " + problem);
  }
  if (batch <= 0) throw Error("--batch: must be positive, got " + std::to_string(batch));
  if (batch > kMaxBatch) {
    throw Error("--batch: " + std::to_string(batch) +
                " is larger than the largest batch megacut models (" + std::to_string(kMaxBatch) +
                ")");
  }
  if (prompt_len <= 0) {
    throw Error("--prompt-len: must be positive, got " + std::to_string(prompt_len));
  }
  if (frames < 0)
    throw Error("--frames: must be positive (0: the default), got " + std::to_string(frames));
  if (frames > 0 && !model.tts) {
    throw Error("--frames: " + model.name + " is not a TTS pipeline (frames count audio frames)");
  }
  if (frames > kMaxFrames) {
    throw Error("--frames: " + std::to_string(frames) +
                " is more than the largest chunk megacut models (" + std::to_string(kMaxFrames) +
                " frames)");
  }
  if (model.tts && frames == 0) frames = kDefaultFrames;
  // The positions decoded after the prompt, compared before they are added: a prompt near
  // 2^63 must not wrap.
  const int64_t decoded = cache_positions(model, 0, frames);
  if (prompt_len > model.decoder.max_position - decoded) {
    throw Error("--prompt-len: " + std::to_string(prompt_len) + " plus " + std::to_string(decoded) +
                (model.tts ? " decoded frames" : " decoded token") + " exceeds " +
                model.config_path.string() + " max_position_embeddings " +
                std::to_string(model.decoder.max_position));
  }
  const int64_t positions = prompt_len + decoded;
  // Divided, not multiplied: a config's max_position_embeddings is not bounded.
  if (positions > kMaxTokens / batch) {
    throw Error("--batch: " + std::to_string(batch) + " sequences of " + std::to_string(positions) +
                " positions (prompt and decoded) are more tokens than megacut models (" +
                std::to_string(kMaxTokens) + ")");
  }
  Scenario s;
  s.batch = batch;
  s.prompt_len = prompt_len;
  s.tp = tp;
  s.stages.push_back(Stage{"prefill", prompt_len, 0, 1, 0});
  if (!model.tts) {
    s.stages.push_back(Stage{"decode", 1, prompt_len, 0, 1});
    return s;
  }
  const TtsConfig& tts = *model.tts;
  s.frames = frames;
  // The talker's decode steps run at positions P .. P + k - 2; the step at the middle of the
  // chunk stands for them all.
  s.stages.push_back(Stage{"decode", 1, prompt_len + (frames - 1) / 2, frames - 1, frames});
  if (tts.code_predictor) {
    const int64_t steps = tts.code_predictor->steps();
    // A frame's code predictor sees the talker's hidden state, then one position per step.
    s.stages.push_back(Stage{"code-predictor", 1, tts.code_predictor->code_groups / 2,
                             frames * steps, frames * steps});
    s.stages.push_back(Stage{"codec", frames, 0, 1, 1});
  } else {
    s.stages.push_back(Stage{"vocoder", frames, 0, 1, 1});
  }
  s.outputs_per_step =
      static_cast<double>(frames * tts.samples_per_frame) / static_cast<double>(tts.sample_rate);
  s.output_unit = "audio seconds";
  return s;
}

}  // namespace megacut::model
