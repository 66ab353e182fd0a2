// megacut: predicts which parts of a model should run as megakernels, from a profile of its
// conventional execution, and checks the prediction on the GPU.
#include <CLI/CLI.hpp>
#include <iostream>

#include "app/commands.h"
#include "model/error.h"

int main(int argc, char** argv) {
  CLI::App app{"megacut: where to cut a model into megakernels and kernel-per-op regions"};
  app.require_subcommand(1);
  megacut::app::add_models_command(app);
  megacut::app::add_graph_command(app);
  megacut::app::add_simulate_command(app);
  megacut::app::add_plan_command(app);
  megacut::app::add_report_command(app);
#ifdef MEGACUT_WITH_GPU_COMMANDS
  megacut::app::add_run_command(app);
  megacut::app::add_profile_command(app);
  megacut::app::add_validate_command(app);
  megacut::app::add_kernels_command(app);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const megacut::Error& e) {
    std::cerr << "megacut: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "megacut: internal error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
