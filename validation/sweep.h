// The validation sweep on the GPU (`megacut validate`): per batch size the planner's top K,
// one megakernel per stage, all conventional with and without Programmatic Dependent Launch
// (and with cuBLASLt's linears where the profile measured them), and R random compositions are
// each predicted from the profile alone (validation.h), then built and timed: one runner per
// batch and PDL setting, its weights uploaded once, the candidates' region kernels compiled up
// front in parallel. validation.json and validation.md are rewritten after each batch, so that
// an interrupted sweep keeps what it measured. CUDA builds only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "validation/validation.h"

namespace megacut::validation {

struct SweepOptions {
  std::string model;  // bundled name, config.json, or checkpoint directory
  std::vector<int64_t> batches;
  std::string profile;     // profile.json of the model; empty: profile it first, into out
  int64_t prompt_len = 0;  // 0: the profile's, or model::kDefaultPromptLen when profiling
  int64_t frames = 0;      // TTS: 0: the profile's, or model::kDefaultFrames when profiling
  int top_k = 5;
  int random = 5;
  int runs = 50;
  int warmup = 5;
  uint64_t seed = 0;  // of the random compositions and the random weights
  std::filesystem::path out;
};

// Callbacks for the terminal; each may be empty.
struct SweepListener {
  std::function<void(const std::string&)> note;      // a line for the log
  std::function<void(const std::string&)> progress;  // where the sweep is, replaced by the next
  // A candidate measured, or not (its measurement_error says why): its place in its batch's
  // list, and the seconds it took.
  std::function<void(const CandidateResult&, size_t index, size_t count, double seconds)>
      candidate_done;
  std::function<void(const BatchValidation&)> batch_done;  // scored and written
};

// Checks the options (errors name the flag), profiles the model first where no profile is
// given, then sweeps the batches. Returns the validation as last written to
// out/validation.json and out/validation.md.
Validation run_sweep(const SweepOptions& options, const SweepListener& listener = {});

// "12.3 s" below a minute, "4m05s" from one.
std::string seconds_text(double seconds);

}  // namespace megacut::validation
