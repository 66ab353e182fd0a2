// Builders of the stage graphs of streaming TTS pipelines (scenario.h says which stages a
// pipeline has and how often each runs):
//
//   prefill          the talker over the text prompt; its last position gives the first frame
//   decode           one talker decode step: the previous frame in, the next frame out
//   code-predictor   one code predictor step (Qwen3-TTS): the next codebook of the frame
//   codec            the speech tokenizer's decoder over the chunk's frames (Qwen3-TTS)
//   vocoder          HiFi-GAN over the chunk's frames (llama-hifigan-tts)
//
// Weights keep the names of the published checkpoints where there is one (config.json's
// "megacut_assumptions" lists where a stage departs from the published model).
#pragma once

#include <string_view>

#include "model/config.h"
#include "model/graph.h"
#include "model/scenario.h"

namespace megacut::model {

// The finalized graph of stage `stage` of a TTS pipeline's scenario.
Graph build_tts_stage(const ModelSpec& model, const Scenario& scenario, std::string_view stage);

}  // namespace megacut::model
