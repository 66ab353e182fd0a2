// What "first output" means for a model, and the stages that lead to it.
//
// An LLM's scenario has two stages: prefill of P prompt tokens for each of B sequences, which
// ends with the first token (TTFO = its time), and a decode step, which gives throughput
// (B tokens per step). Each stage is its own graph and has its own regions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"

namespace megacut::model {

struct Stage {
  std::string name;
  int64_t seq_len = 0;   // query rows per sequence in this stage
  int64_t past_len = 0;  // positions already in the KV cache when it runs
  // How many times the stage runs before the first output is out (prefill 1, decode 0).
  int64_t runs_to_first_output = 0;
  // Outputs per sequence each run adds to steady-state throughput (decode 1, prefill 0).
  int64_t outputs_per_run = 0;
};

struct Scenario {
  int64_t batch = 1;
  int64_t prompt_len = 128;
  std::vector<Stage> stages;

  const Stage& stage(std::string_view name) const;
  std::vector<std::string> stage_names() const;
};

inline constexpr int64_t kDefaultPromptLen = 128;

// The LLM scenario: prefill of `prompt_len` tokens, then one decode step at position P.
Scenario make_scenario(const ModelSpec& model, int64_t batch, int64_t prompt_len);

}  // namespace megacut::model
