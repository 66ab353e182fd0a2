// megacut validate: every prediction checked against a run on this GPU (validation/sweep.h
// runs the sweep); this prints where it is, each candidate as it is measured and each batch's
// scores, and the overall ones at the end.

#include <cstdio>
#include <memory>

#include "app/commands.h"
#include "app/terminal.h"
#include "model/batch_list.h"
#include "model/error.h"
#include "validation/sweep.h"
#include "validation/validation.h"

namespace megacut::app {
namespace {

using validation::seconds_text;

struct ValidateCommandOptions {
  std::string batches;
  validation::SweepOptions sweep;
  std::string out;
};

std::string percent(const std::optional<double>& fraction) {
  return fraction ? model::percent_text(*fraction) : "-";
}

void print_candidate(Terminal& t, const validation::CandidateResult& c, size_t index, size_t count,
                     double seconds) {
  std::string text =
      printf_string("  %2zu/%zu %-22s", index + 1, count, c.candidate.label().c_str());
  if (c.predicted) {
    text +=
        printf_string(" TTFO predicted %9.4f ms", static_cast<double>(c.predicted->ttfo_ns) / 1e6);
  } else {
    text += " TTFO predicted         -   ";
  }
  if (c.measured) {
    const model::LatencyStats ttfo = c.measured->ttfo.converted("ms");
    const model::LatencyStats step = c.measured->decode_step.converted("ms");
    text += printf_string(", measured p50 %9.4f p95 %9.4f", ttfo.p50, ttfo.p95);
    if (c.predicted) {
      const double p = static_cast<double>(c.predicted->ttfo_ns) / 1e6;
      text += printf_string(" (error %.1f%%)",
                            100 * validation::absolute_percentage_error(p, ttfo.p50));
    }
    text += printf_string("; decode step p50 %.4f ms", step.p50);
  }
  text += "  [" + seconds_text(seconds) + "]";
  t.line(text);
}

void print_batch(Terminal& t, const validation::BatchValidation& b) {
  const validation::BatchMetrics& m = b.metrics;
  auto name = [&](const std::optional<size_t>& i) {
    return i ? "'" + b.candidates[*i].candidate.label() + "'" : std::string("none");
  };
  t.line(printf_string(
      "batch %lld: predicted best %s, measured best %s: %s (regret %s, tolerance %s); TTFO "
      "MAPE %s, decode step MAPE %s, Kendall tau %s over %d of %zu candidates",
      static_cast<long long>(b.batch), name(m.predicted_best).c_str(),
      name(m.measured_best).c_str(), m.hit ? (*m.hit ? "hit" : "MISS") : "no verdict",
      percent(m.regret).c_str(), percent(m.tolerance).c_str(), percent(m.ttfo_mape).c_str(),
      percent(m.decode_step_mape).c_str(),
      m.kendall_tau ? printf_string("%.3f", *m.kendall_tau).c_str() : "-", m.scored,
      b.candidates.size()));
}

void run(ValidateCommandOptions o) {
  o.sweep.batches = model::parse_batch_list(o.batches);
  o.sweep.out = o.out;
  Terminal t;
  validation::SweepListener listener;
  listener.note = [&](const std::string& text) { t.line(text); };
  listener.progress = [&](const std::string& text) { t.progress(text); };
  listener.candidate_done = [&](const validation::CandidateResult& c, size_t index, size_t count,
                                double seconds) { print_candidate(t, c, index, count, seconds); };
  listener.batch_done = [&](const validation::BatchValidation& b) { print_batch(t, b); };
  const validation::Validation v = validation::run_sweep(o.sweep, listener);

  const validation::OverallMetrics overall = validation::score_overall(v.batches);
  t.line(printf_string(
      "overall: TTFO MAPE %s (worst batch %s), decode step MAPE %s over %d candidates; hits %d "
      "of %d; lowest Kendall tau %s; %s",
      percent(overall.ttfo_mape).c_str(), percent(overall.worst_batch_ttfo_mape).c_str(),
      percent(overall.decode_step_mape).c_str(), overall.scored, overall.hits, overall.judged,
      overall.min_kendall_tau ? printf_string("%.3f", *overall.min_kendall_tau).c_str() : "-",
      seconds_text(t.elapsed_s()).c_str()));
  t.line("validation written to " + (o.sweep.out / "validation.json").string() + " (" +
         std::string(validation::kValidationSchema) + ") and " +
         (o.sweep.out / "validation.md").string());
  int unmeasured = 0;
  for (const validation::BatchValidation& b : v.batches) {
    for (const validation::CandidateResult& c : b.candidates) unmeasured += !c.measured;
  }
  if (unmeasured > 0) {
    throw Error(std::to_string(unmeasured) +
                " candidates could not be measured; validation.md says which and why");
  }
}

}  // namespace

void add_validate_command(CLI::App& root) {
  auto o = std::make_shared<ValidateCommandOptions>();
  CLI::App* cmd = root.add_subcommand(
      "validate",
      "Predict and measure the planner's choices and baselines on this GPU (validation.json)");
  cmd->add_option("--model,-m", o->sweep.model,
                  "Bundled model name, config.json, or checkpoint dir")
      ->required();
  cmd->add_option("--batch,-b", o->batches, "Batch sizes, e.g. 1,2,4,8,16,32")->required();
  cmd->add_option("--profile", o->sweep.profile,
                  "profile.json of this model (default: profile it first, into OUT/profile.json)");
  cmd->add_option("--prompt-len,-p", o->sweep.prompt_len,
                  "Prompt length in tokens when profiling (default: 128; with --profile, its own)");
  add_frames_option(cmd, o->sweep.frames);
  cmd->add_option("--candidates,-k", o->sweep.top_k,
                  "The planner's top K compositions to measure: its best, then its best with at "
                  "least 1/(K-1), ..., all of each stage's ops in mk regions (megacut plan --top)")
      ->capture_default_str();
  cmd->add_option("--random", o->sweep.random, "Random compositions to measure per batch")
      ->capture_default_str();
  cmd->add_option("--runs", o->sweep.runs, "Timed runs of each candidate")->capture_default_str();
  cmd->add_option("--warmup", o->sweep.warmup, "Warm-up runs of each candidate")
      ->capture_default_str();
  cmd->add_option("--seed", o->sweep.seed, "Seed of the random compositions and the random weights")
      ->capture_default_str();
  cmd->add_option("--out,-o", o->out, "Directory for validation.json and validation.md")
      ->required();
  cmd->callback([o] { run(*o); });
}

}  // namespace megacut::app
