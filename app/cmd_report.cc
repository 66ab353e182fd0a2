// megacut report: the validations of several models (each DIR/validation.json from megacut
// validate) in one Markdown report, OUT/report.md, and the data scripts/plot.py draws its SVG
// plots from, OUT/report-data.json (validation/report.h). Needs no GPU: the mk coverage of each
// candidate comes from simulating it again with the profile its validation names (a path
// relative to the current directory), left out where that profile is not found; beside the
// profile, its trace of the all-conventional run is paired with the simulator's trace of the same
// run, written into OUT.
#include <cstdio>
#include <filesystem>
#include <optional>

#include "app/commands.h"
#include "model/composition.h"
#include "model/config.h"
#include "model/error.h"
#include "model/output_file.h"
#include "model/profile.h"
#include "model/trace_events.h"
#include "simulator/simulator.h"
#include "simulator/trace.h"
#include "validation/report.h"
#include "validation/validation.h"

namespace megacut::app {
namespace {

namespace fs = std::filesystem;

struct ReportCommandOptions {
  std::vector<std::string> in;
  std::string out;
};

void write_file(const fs::path& path, const std::string& text) {
  model::write_text_file(path, text);
  std::printf("wrote %s\n", path.string().c_str());
}

// The profiler's trace of the all-conventional run (megacut profile --trace, named
// trace-b<batch>.json beside the profile) at the smallest validated batch that has one, and the
// simulator's Chrome trace of the same run, written into `out`.
std::optional<validation::ReportTimeline> write_timeline(const validation::ReportModel& m,
                                                         const model::Profile& profile,
                                                         const fs::path& out) {
  const fs::path dir = fs::path(m.validation.profile).parent_path();
  for (const validation::BatchValidation& b : m.validation.batches) {
    const fs::path measured = dir / ("trace-b" + std::to_string(b.batch) + ".json");
    if (!fs::exists(measured)) continue;
    simulator::Simulator sim(profile, simulator::SimOptions{.record_spans = true});
    const model::Composition conv =
        model::uniform_composition(sim.stage_shapes(b.batch), model::RegionKind::conv);
    const simulator::Prediction p = sim.simulate(conv, b.batch);
    validation::ReportTimeline t;
    t.batch = b.batch;
    t.composition = conv.to_string();
    t.measured_trace = fs::relative(fs::absolute(measured), fs::absolute(out)).string();
    t.simulated_trace = validation::report_simulated_trace(m.validation.model, b.batch);
    write_file(out / t.simulated_trace, model::trace_text(simulator::chrome_trace(p, sim)));
    return t;
  }
  return std::nullopt;
}

validation::ReportModel read_model(const fs::path& dir, const fs::path& out) {
  validation::ReportModel m;
  m.source = (dir / "validation.json").string();
  m.validation = validation::validation_from_json(model::read_json_file(m.source), m.source);
  const std::string& profile = m.validation.profile;
  if (!fs::exists(profile)) {
    validation::skip_coverage(
        m, "the profile " + profile + " is not found from " + fs::current_path().string());
    return m;
  }
  model::Profile p;
  try {
    p = model::read_profile(profile);
    validation::add_coverage(m, p);
  } catch (const Error& e) {
    validation::skip_coverage(m, e.what());
    return m;
  }
  // Another model's profile (add_coverage's note says so) holds another model's trace.
  if (p.model_name != m.validation.model) return m;
  try {
    m.timeline = write_timeline(m, p, out);
  } catch (const Error& e) {
    m.notes.push_back(std::string("no timeline: ") + e.what());
  }
  return m;
}

void run(const ReportCommandOptions& o) {
  const fs::path out = o.out;
  std::error_code error;
  fs::create_directories(out, error);
  if (error) throw Error("--out: cannot make directory " + o.out + " (" + error.message() + ")");
  std::vector<validation::ReportModel> models;
  for (const std::string& dir : o.in) {
    models.push_back(read_model(dir, out));
    for (const std::string& note : models.back().notes) {
      std::printf("%s: note: %s\n", models.back().validation.model.c_str(), note.c_str());
    }
  }
  validation::check_distinct_models(models);
  write_file(out / "report.md", validation::report_markdown(models));
  write_file(out / "report-data.json", validation::report_data_json(models).dump(1) + "\n");
  std::printf("plots: python3 scripts/plot.py %s\n", o.out.c_str());
}

}  // namespace

void add_report_command(CLI::App& root) {
  auto o = std::make_shared<ReportCommandOptions>();
  CLI::App* cmd = root.add_subcommand(
      "report", "Bring validations of several models into one report (report.md, plot data)");
  cmd->add_option("--in,-i", o->in, "Directory of a validation.json (megacut validate --out)")
      ->required();
  cmd->add_option("--out,-o", o->out, "Directory for report.md and report-data.json")->required();
  cmd->callback([o] { run(*o); });
}

}  // namespace megacut::app
