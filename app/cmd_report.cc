// megacut report: the validations of several models (each DIR/validation.json from megacut
// validate) in one Markdown report, OUT/report.md, and the data scripts/plot.py draws its SVG
// plots from, OUT/report-data.json (planner/report.h). Needs no GPU: the mk coverage of each
// candidate comes from simulating it again with the profile its validation names (a path
// relative to the current directory), left out where that profile is not found.
#include <cstdio>
#include <filesystem>

#include "app/commands.h"
#include "app/output_file.h"
#include "model/config.h"
#include "model/error.h"
#include "planner/report.h"
#include "planner/validation.h"
#include "simulator/profile.h"

namespace megacut::app {
namespace {

namespace fs = std::filesystem;

struct ReportCommandOptions {
  std::vector<std::string> in;
  std::string out;
};

planner::ReportModel read_model(const fs::path& dir) {
  planner::ReportModel m;
  m.source = (dir / "validation.json").string();
  m.validation = planner::validation_from_json(model::read_json_file(m.source), m.source);
  const std::string& profile = m.validation.profile;
  if (!fs::exists(profile)) {
    planner::skip_coverage(
        m, "the profile " + profile + " is not found from " + fs::current_path().string());
    return m;
  }
  try {
    planner::add_coverage(m, simulator::read_profile(profile));
  } catch (const Error& e) {
    planner::skip_coverage(m, e.what());
  }
  return m;
}

void write_file(const fs::path& path, const std::string& text) {
  write_text_file(path, text);
  std::printf("wrote %s\n", path.string().c_str());
}

void run(const ReportCommandOptions& o) {
  std::vector<planner::ReportModel> models;
  for (const std::string& dir : o.in) {
    models.push_back(read_model(dir));
    for (const std::string& note : models.back().notes) {
      std::printf("%s: note: %s\n", models.back().validation.model.c_str(), note.c_str());
    }
  }
  planner::check_distinct_models(models);
  const fs::path out = o.out;
  std::error_code error;
  fs::create_directories(out, error);
  if (error) throw Error("--out: cannot make directory " + o.out + " (" + error.message() + ")");
  write_file(out / "report.md", planner::report_markdown(models));
  write_file(out / "report-data.json", planner::report_data_json(models).dump(1) + "\n");
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
