// The megacut subcommands. Each add_* registers one subcommand on the root app.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>

namespace megacut::app {

// --frames K, shared by the commands that build a scenario: the frames of a TTS pipeline's
// first audio chunk.
inline CLI::Option* add_frames_option(CLI::App* cmd, int64_t& frames) {
  return cmd
      ->add_option("--frames", frames, "TTS pipelines: frames in the first audio chunk (default 4)")
      ->check(CLI::PositiveNumber);
}

void add_models_command(CLI::App& root);
void add_graph_command(CLI::App& root);
void add_simulate_command(CLI::App& root);
void add_plan_command(CLI::App& root);
void add_report_command(CLI::App& root);
// The GPU commands exist only in builds with the CUDA toolkit (MEGACUT_WITH_GPU_COMMANDS).
void add_run_command(CLI::App& root);
void add_profile_command(CLI::App& root);
void add_validate_command(CLI::App& root);
void add_kernels_command(CLI::App& root);  // compiles with NVRTC; needs no GPU

}  // namespace megacut::app
