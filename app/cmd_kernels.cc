// megacut kernels: the kernels of a composition's mk regions, compiled as `run` would compile
// them (NVRTC, or the kernel cache), with no GPU, and what ptxas said of each: a thread's
// registers, stack and spills. A tile body that spills in a region shows here first. And each
// kernel's machine code, in KB: every task of the region runs its body from it.
#include <cstdio>
#include <string>
#include <vector>

#include "app/commands.h"
#include "app/composition_arg.h"
#include "executor/megakernel_codegen.h"
#include "model/batch_list.h"
#include "model/decoder.h"
#include "model/scenario.h"

namespace megacut::app {
namespace {

struct KernelsOptions {
  std::string model;
  std::string batch = "1";
  int64_t prompt_len = model::kDefaultPromptLen;
  int64_t frames = 0;
  std::string composition = "mk";
  int arch = 90;
  bool timing = false;
};

// A report field, "-" where ptxas's report is not known.
std::string number_or_dash(int value) { return value < 0 ? "-" : std::to_string(value); }

void run(const KernelsOptions& o) {
  const int64_t batch = model::parse_batch(o.batch);
  const model::ModelSpec spec = model::load_model(o.model);
  const model::Scenario scenario = model::make_scenario(spec, batch, o.prompt_len, o.frames);
  std::vector<model::StageShape> shapes;
  std::vector<model::Graph> graphs;
  for (const model::Stage& s : scenario.stages) {
    graphs.push_back(model::build_graph(spec, scenario, s.name));
    shapes.push_back({s.name, graphs.back().op_count()});
  }
  const model::Composition composition =
      read_composition(o.composition, batch, scenario.tp, shapes).composition;
  std::printf("%s · batch %lld · prompt %lld · sm_%d%s\n", spec.name.c_str(),
              static_cast<long long>(batch), static_cast<long long>(o.prompt_len), o.arch,
              o.timing ? " · with task timing" : "");
  std::printf("composition: %s\n", composition.to_string().c_str());
  std::printf("kernel cache: %s\n\n",
              executor::kernel_cache_dir().empty() ? "none" : executor::kernel_cache_dir().c_str());
  std::printf("%-10s %-14s %6s %9s %11s %12s %11s %10s  %s\n", "stage", "region", "bodies",
              "registers", "stack (B)", "spill st (B)", "spill ld (B)", "code (KB)", "compiled");
  int regions = 0;
  for (size_t s = 0; s < graphs.size(); ++s) {
    const std::string& stage = scenario.stages[s].name;
    for (const model::Region& r : composition.regions(stage)) {
      if (r.kind != model::RegionKind::mk) continue;
      ++regions;
      const std::string name = "mk[" + std::to_string(r.begin) + ":" + std::to_string(r.end) + "]";
      const std::vector<std::string> bodies =
          executor::region_body_names(graphs[s], r.begin, r.end);
      const executor::CompiledKernel k =
          executor::compile_region_kernel(executor::region_kernel_source(bodies, o.timing), o.arch,
                                          "megakernel region " + stage + " " + name);
      const executor::PtxasReport& p = k.ptxas;
      char compiled[64];
      if (k.cache_hit) {
        std::snprintf(compiled, sizeof compiled, "cached%s",
                      p.known() ? "" : " (no ptxas report kept)");
      } else {
        std::snprintf(compiled, sizeof compiled, "in %.1f s", k.compile_ms / 1e3);
      }
      const long long code = executor::cubin_code_bytes(k.cubin);
      char code_kb[32] = "-";
      if (code >= 0) std::snprintf(code_kb, sizeof code_kb, "%.1f", code / 1024.0);
      std::printf("%-10s %-14s %6zu %9s %11s %12s %11s %10s  %s\n", stage.c_str(), name.c_str(),
                  bodies.size(), number_or_dash(p.registers).c_str(),
                  number_or_dash(p.stack_bytes).c_str(),
                  number_or_dash(p.spill_store_bytes).c_str(),
                  number_or_dash(p.spill_load_bytes).c_str(), code_kb, compiled);
      std::fflush(stdout);  // each region as it is done: a compile takes seconds
    }
  }
  if (regions == 0) std::printf("(no mk regions in this composition)\n");
}

}  // namespace

void add_kernels_command(CLI::App& root) {
  auto o = std::make_shared<KernelsOptions>();
  CLI::App* cmd = root.add_subcommand(
      "kernels",
      "Compile a composition's mk region kernels (no GPU needed) and show their registers and "
      "spills");
  cmd->add_option("--model,-m", o->model, "Bundled model name, config.json, or checkpoint dir")
      ->required();
  cmd->add_option("--batch,-b", o->batch, "Batch size")->type_name("INT")->capture_default_str();
  cmd->add_option("--prompt-len,-p", o->prompt_len, "Prompt length in tokens")
      ->capture_default_str();
  add_frames_option(cmd, o->frames);
  cmd->add_option("--composition,-c", o->composition,
                  "Composition as run takes it (text, plan.json or composition JSON)")
      ->capture_default_str();
  cmd->add_option("--arch", o->arch, "Compute capability to compile for, e.g. 90 (sm_90a)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--task-timing", o->timing,
                "The kernels run --task-timing compiles (per-task timing records)");
  cmd->callback([o] { run(*o); });
}

}  // namespace megacut::app
