// The megacut subcommands. Each add_* registers one subcommand on the root app.
#pragma once

#include <CLI/CLI.hpp>

namespace megacut::app {

void add_models_command(CLI::App& root);
void add_graph_command(CLI::App& root);
void add_simulate_command(CLI::App& root);
void add_plan_command(CLI::App& root);
void add_report_command(CLI::App& root);
// The GPU commands exist only in builds with the CUDA toolkit (MEGACUT_WITH_GPU_COMMANDS).
void add_run_command(CLI::App& root);
void add_profile_command(CLI::App& root);
void add_validate_command(CLI::App& root);

}  // namespace megacut::app
