// What "first output" means for a model, and the stages that lead to it.
//
// An LLM's scenario has two stages: prefill of P prompt tokens for each of B sequences, which
// ends with the first token (TTFO = its time), and a decode step, which gives throughput
// (B tokens per step).
//
// A streaming TTS pipeline's first output is its first audio chunk (time to first audio,
// TTFA): prefill of the text prompt, whose last position gives the first frame; k - 1 talker
// decode steps for the other frames of the chunk; for Qwen3-TTS, (G - 1) code predictor steps
// per frame for codebooks 2..G; then the codec decoder (Qwen3-TTS) or vocoder
// (llama-hifigan-tts) over the chunk's k frames. In steady streaming a step makes the next
// chunk: k talker decode steps, k (G - 1) code predictor steps and one decoder run, giving
// k x samples-per-frame / sample-rate seconds of audio per sequence.
//
// Each stage is its own graph and has its own regions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"

namespace megacut::model {

struct Stage {
  std::string name;
  int64_t seq_len = 0;   // query rows (time steps) per sequence in this stage
  int64_t past_len = 0;  // positions already in the KV cache when it runs
  // How many times the stage runs before the first output is out (LLM prefill 1, decode 0).
  int64_t runs_to_first_output = 0;
  // How many times the stage runs in one steady-state step (LLM decode 1, prefill 0).
  int64_t runs_per_step = 0;
};

struct Scenario {
  int64_t batch = 1;
  int64_t prompt_len = 128;
  int64_t frames = 0;  // TTS: frames in the first audio chunk (k); 0 for an LLM
  // Tensor-parallel degree: the GPUs each layer is sliced over (Megatron style); a stage graph
  // is one rank's, all ranks alike.
  int64_t tp = 1;
  std::vector<Stage> stages;
  // What one steady-state step gives each sequence: 1 token, or k frames' seconds of audio.
  double outputs_per_step = 1;
  std::string output_unit = "tokens";  // "tokens" or "audio seconds"

  const Stage& stage(std::string_view name) const;
  std::vector<std::string> stage_names() const;
};

inline constexpr int64_t kDefaultPromptLen = 128;
inline constexpr int64_t kDefaultFrames = 4;
// The most frames a first audio chunk may hold (minutes of audio), and the most tokens (batch
// times KV-cache positions) a scenario may hold: far beyond what is served, and low enough that
// the tensor sizes computed from them stay well inside 64 bits.
inline constexpr int64_t kMaxFrames = int64_t{1} << 12;
inline constexpr int64_t kMaxTokens = int64_t{1} << 24;

// The positions the talker's KV cache holds: the prompt and the positions its decode steps run
// at (a streaming step runs one even when the first chunk needs none). `frames` 0 for a TTS
// pipeline means kDefaultFrames, as in make_scenario.
int64_t cache_positions(const ModelSpec& model, int64_t prompt_len, int64_t frames);

// The order in which the stages run to the first output, or in one steady-state step: stage
// names, one per run (each stage appears runs_to_first_output or runs_per_step times). For a
// TTS pipeline, frame by frame: prefill, then per frame the talker step (not for the first
// frame: the prefill gave it) and the code predictor steps, then the decoder.
enum class Sequence { first_output, step };
std::vector<std::string> stage_sequence(const Scenario& scenario, Sequence sequence);

// The most GPUs a tensor-parallel scenario may span (those of one host).
inline constexpr int64_t kMaxTp = 8;

// Why `model` cannot be sliced over `tp` GPUs (naming the config field that does not divide),
// or "" where it can.
std::string tensor_parallel_problem(const ModelSpec& model, int64_t tp);

// "one GPU", "2 GPUs": a tensor-parallel degree in messages.
std::string gpu_count_text(int64_t tp);

// The model's scenario at batch `batch`: for an LLM, prefill of `prompt_len` tokens then one
// decode step at position P; for a TTS pipeline, the stages of the first chunk of `frames`
// frames (0: kDefaultFrames). `frames` is rejected for an LLM. `tp` > 1 slices an LLM's layers
// over that many GPUs: its heads, KV heads, intermediate size and vocabulary must divide by it.
Scenario make_scenario(const ModelSpec& model, int64_t batch, int64_t prompt_len,
                       int64_t frames = 0, int64_t tp = 1);

}  // namespace megacut::model
