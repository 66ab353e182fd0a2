// A float64 reference of a whole decoder model (Llama, Qwen3), written from the architecture
// rather than from megacut's graph, so a mistake in the graph builder shows up as a mismatch.
// Each op's output is rounded to bf16, as the GPU stores it; logits stay in float.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "model/config.h"

namespace megacut::reference {

struct GenerationLogits {
  std::vector<float> prefill;  // (batch, vocab): each sequence's last prompt position
  std::vector<float> decode;   // (steps, batch, vocab)
};

// Logits of prefill over `prompt` (batch, prompt_len) and of decode steps fed `decode_inputs`
// (steps, batch): step k's input token for each sequence, at position prompt_len + k. Feeding
// the tokens the GPU chose keeps both sides on the same sequence even where two logits nearly
// tie. `weights` maps Hugging Face tensor names to their values (bf16 widened to float).
GenerationLogits decoder_logits(const model::DecoderConfig& config,
                                const std::map<std::string, std::vector<float>>& weights,
                                int64_t batch, std::span<const int32_t> prompt,
                                std::span<const int32_t> decode_inputs);

}  // namespace megacut::reference
