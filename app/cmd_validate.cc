// megacut validate: every prediction checked against a run on this GPU. Per batch size the
// planner's top K, one megakernel per stage, all conventional with and without Programmatic
// Dependent Launch, and R random compositions are each predicted from the profile alone, then
// built and timed (one runner per batch and PDL setting, its weights uploaded once); the scores
// (validation/validation.h) go to validation.json and validation.md, rewritten after each batch so
// that an interrupted sweep keeps what it measured. A progress line shows where the sweep is when
// stdout is a terminal.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <set>
#include <thread>

#include "app/commands.h"
#include "app/terminal.h"
#include "executor/device.h"
#include "executor/megakernel_codegen.h"
#include "executor/runner.h"
#include "model/batch_list.h"
#include "model/error.h"
#include "model/output_file.h"
#include "model/random_composition.h"
#include "planner/plan.h"
#include "profiler/profiler.h"
#include "validation/validation.h"

namespace megacut::app {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct ValidateCommandOptions {
  std::string model;
  std::string batches;
  std::string profile;
  int64_t prompt_len = 0;  // 0: the profile's, or model::kDefaultPromptLen when profiling
  int64_t frames = 0;      // TTS: 0: the profile's, or model::kDefaultFrames when profiling
  int top_k = 5;
  int random = 5;
  int runs = 50;
  int warmup = 5;
  uint64_t seed = 0;
  std::string out;
};

std::string seconds_text(Clock::time_point since) {
  const double s = std::chrono::duration<double>(Clock::now() - since).count();
  return s < 60 ? printf_string("%.1f s", s)
                : printf_string("%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
}

std::string percent(const std::optional<double>& fraction) {
  return fraction ? model::percent_text(*fraction) : "-";
}

void write_outputs(const validation::Validation& v, const fs::path& dir) {
  model::write_text_file(dir / "validation.json", validation::validation_to_json(v).dump(1) + "\n");
  model::write_text_file(dir / "validation.md", validation::validation_markdown(v));
}

// Whether the profile measured cuBLASLt's kernels beside ours.
bool has_cublaslt_kernels(const model::Profile& profile) {
  for (const model::BatchProfile& b : profile.batches) {
    for (const model::StageProfile& s : b.stages) {
      for (const model::OpProfile& op : s.ops) {
        if (op.conv_cublaslt) return true;
      }
    }
  }
  return false;
}

bool has_task_benchmarks(const model::Profile& profile) {
  for (const model::BatchProfile& b : profile.batches) {
    for (const model::StageProfile& s : b.stages) {
      for (const model::OpProfile& op : s.ops) {
        if (!op.tasks.empty()) return true;
      }
    }
  }
  return false;
}

model::Profile profile_model(const ValidateCommandOptions& o, const std::vector<int64_t>& batches,
                             const fs::path& out, Terminal& t) {
  profiler::ProfileOptions options;
  options.model = o.model;
  options.batches = batches;
  options.prompt_len = o.prompt_len > 0 ? o.prompt_len : model::kDefaultPromptLen;
  options.frames = o.frames;
  options.seed = o.seed;
  options.out = out;
  size_t done = 0;
  profiler::ProfileListener listener;
  listener.note = [&](const std::string& text) { t.line(text); };
  listener.progress = [&](const std::string& phase, int step, int steps) {
    t.progress(printf_string("profiling batch %lld (%zu of %zu): %s %d/%d",
                             static_cast<long long>(batches[std::min(done, batches.size() - 1)]),
                             done + 1, batches.size(), phase.c_str(), step, steps));
  };
  listener.batch_done = [&](const profiler::BatchSummary& b) {
    t.line(
        printf_string("profiled batch %lld: TTFO p50 %.4f ms (its stage runs, each replayed alone)",
                      static_cast<long long>(b.batch), b.ttfo_untraced_ms.p50));
    ++done;
  };
  t.line("profiling " + o.model + " into " + out.string() + " (as megacut profile does)");
  return profiler::run_profile(options, listener);
}

// The stages the runner built must be those the profile describes: the same names and op counts.
void check_stages(const executor::ScenarioRunner& runner,
                  const std::vector<model::StageShape>& shapes, int64_t batch,
                  const std::string& profile) {
  bool same = runner.stage_count() == static_cast<int>(shapes.size());
  for (int s = 0; same && s < runner.stage_count(); ++s) {
    same = runner.stage_graph(s).stage() == shapes[s].name &&
           runner.stage_graph(s).op_count() == shapes[s].op_count;
  }
  if (!same) {
    throw Error("batch " + std::to_string(batch) + ": the model's stages differ from those of " +
                profile + " (op counts); was the profile made from another config?");
  }
}

// Compiles every region kernel the candidates need, in parallel, into the kernel cache, so that
// measuring a candidate only loads cubins. A kernel that fails to compile is left for its
// candidate's measurement to report.
void precompile(const executor::ScenarioRunner& runner,
                const std::vector<validation::CandidateResult>& candidates, int arch, Terminal& t) {
  std::set<std::string> sources;
  for (const validation::CandidateResult& c : candidates) {
    for (int s = 0; s < runner.stage_count(); ++s) {
      const model::Graph& g = runner.stage_graph(s);
      for (const model::Region& r : c.candidate.composition.regions(g.stage())) {
        if (r.kind != model::RegionKind::mk) continue;
        sources.insert(executor::region_kernel_source(
            executor::region_body_names(g, r.begin, r.end), /*timing=*/false));
      }
    }
  }
  if (sources.empty()) return;
  const Clock::time_point start = Clock::now();
  const std::vector<std::string> list(sources.begin(), sources.end());
  const unsigned threads =
      std::min<unsigned>(std::max(1u, std::thread::hardware_concurrency()), list.size());
  std::atomic<size_t> next{0}, compiled{0}, failed{0};
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < threads; ++i) {
    pool.emplace_back([&] {
      for (size_t k = next++; k < list.size(); k = next++) {
        try {
          executor::compile_region_kernel(list[k], arch, "region kernel");
          ++compiled;
        } catch (const std::exception&) {
          ++failed;
        }
      }
    });
  }
  for (std::thread& th : pool) th.join();
  t.line(printf_string("  %zu region kernels compiled or found in the cache in %s on %u threads%s",
                       compiled.load(), seconds_text(start).c_str(), threads,
                       failed > 0 ? printf_string(", %zu failed", failed.load()).c_str() : ""));
}

struct Sweep {
  size_t batch_index = 0;
  size_t batches = 0;
  Clock::time_point start = Clock::now();
};

void print_candidate(Terminal& t, size_t index, size_t count, const validation::CandidateResult& c,
                     Clock::time_point since) {
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
  text += "  [" + seconds_text(since) + "]";
  t.line(text);
}

// Builds and times every candidate of one batch: the runner made once per PDL setting (the
// candidates without PDL first), the kernels compiled up front.
void measure_batch(const model::ModelSpec& spec, const model::Scenario& scenario,
                   const executor::HostWeights& weights, executor::RunOptions options,
                   const std::vector<model::StageShape>& shapes, const std::string& profile,
                   const executor::DeviceInfo& device,
                   std::vector<validation::CandidateResult>& candidates, const Sweep& sweep,
                   Terminal& t) {
  std::vector<size_t> order(candidates.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return candidates[a].candidate.pdl < candidates[b].candidate.pdl;
  });
  std::unique_ptr<executor::ScenarioRunner> runner;
  for (size_t n = 0; n < order.size(); ++n) {
    validation::CandidateResult& c = candidates[order[n]];
    const std::string what = "batch " + std::to_string(scenario.batch) + ", candidate " +
                             std::to_string(order[n] + 1) + " (" + c.candidate.label() + ", '" +
                             c.candidate.text + "'" + (c.candidate.pdl ? " with PDL" : "") + ")";
    t.progress(printf_string("batch %lld (%zu of %zu) · candidate %zu of %zu (%s) · %s elapsed",
                             static_cast<long long>(scenario.batch), sweep.batch_index + 1,
                             sweep.batches, n + 1, order.size(), c.candidate.label().c_str(),
                             seconds_text(sweep.start).c_str()));
    const Clock::time_point start = Clock::now();
    if (!runner || options.pdl != c.candidate.pdl) {
      runner.reset();
      options.pdl = c.candidate.pdl;
      try {
        runner = std::make_unique<executor::ScenarioRunner>(spec, scenario, weights, options);
      } catch (const Error& e) {
        throw Error("batch " + std::to_string(scenario.batch) + ": " + e.what());
      }
      check_stages(*runner, shapes, scenario.batch, profile);
      if (n == 0) precompile(*runner, candidates, device.arch, t);
    }
    try {
      runner->set_providers(c.candidate.providers);
      runner->set_composition(c.candidate.composition);
      const executor::Measurement m = runner->measure();
      c.measured = validation::Measured{m.ttfo, m.decode_step};
    } catch (const Error& e) {
      c.measurement_error = e.what();
      t.line("  " + what + ": not measured: " + e.what());
    }
    print_candidate(t, order[n], candidates.size(), c, start);
  }
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

void run(const ValidateCommandOptions& o) {
  const std::vector<int64_t> batches = model::parse_batch_list(o.batches);
  if (o.top_k < 1) throw Error("--candidates: must be at least 1");
  if (o.random < 0) throw Error("--random: must not be negative");
  if (o.runs < 1) throw Error("--runs: must be at least 1");
  if (o.warmup < 0) throw Error("--warmup: must not be negative");
  if (o.prompt_len < 0)
    throw Error("--prompt-len: must not be negative (0: the default), not " +
                std::to_string(o.prompt_len));
  const model::ModelSpec spec = model::load_model(o.model);
  const fs::path out = o.out;
  Terminal t;

  model::Profile profile;
  if (!o.profile.empty()) {
    profile = model::read_profile(o.profile);
    if (profile.model_name != spec.name) {
      throw Error("--profile: " + o.profile + " is a profile of " + profile.model_name +
                  ", not of " + spec.name);
    }
    if (o.prompt_len > 0 && o.prompt_len != profile.prompt_len) {
      throw Error("--prompt-len: " + o.profile + " was measured with prompts of " +
                  std::to_string(profile.prompt_len) + " tokens, not " +
                  std::to_string(o.prompt_len));
    }
    if (o.frames > 0 && o.frames != profile.frames) {
      throw Error("--frames: " + o.profile + " was measured with chunks of " +
                  std::to_string(profile.frames) + " frames, not " + std::to_string(o.frames));
    }
    for (int64_t b : batches) model::check_batch(profile, b, /*allow_interpolate=*/false);
  }
  const executor::DeviceInfo device = executor::current_device();
  std::error_code error;
  fs::create_directories(out, error);
  if (error) throw Error("--out: cannot make directory " + o.out + " (" + error.message() + ")");
  const Clock::time_point start = Clock::now();
  if (o.profile.empty()) profile = profile_model(o, batches, out / "profile.json", t);

  validation::Validation v;
  v.model = spec.name;
  v.device = device.name;
  v.profile = o.profile.empty() ? (out / "profile.json").string() : o.profile;
  v.profile_device = profile.device.name;
  v.prompt_len = profile.prompt_len;
  v.provider = std::string(model::policy_name(model::ProviderPolicy::fastest));
  const bool cublaslt = has_cublaslt_kernels(profile);
  v.runs = o.runs;
  v.warmup = o.warmup;
  v.seed = o.seed;
  v.top_k = o.top_k;
  v.random = o.random;

  const std::string batch_text = model::comma_list(batches);
  t.line(printf_string(
      "megacut validate: %s on %s · batches %s · profile %s (%s) · planner's top %d, one mk per "
      "stage, conv with and without PDL, %d random (seed %llu) · %d warm-up and %d timed runs "
      "each · linear providers: %s",
      spec.name.c_str(), device.name.c_str(), batch_text.c_str(), v.profile.c_str(),
      v.profile_device.c_str(), o.top_k, o.random, static_cast<unsigned long long>(o.seed),
      o.warmup, o.runs,
      cublaslt ? "the plan's, per op the faster; conv with cuBLASLt's too"
               : "ours (the profile has no cuBLASLt kernels)"));

  planner::PlanOptions plan_options;
  plan_options.batches = batches;
  plan_options.top_k = o.top_k;
  plan_options.objective = planner::Objective::ttfo;
  plan_options.sim.linear_provider = model::ProviderPolicy::fastest;
  plan_options.progress = [&](double fraction, const std::string& doing) {
    t.progress("planning " + progress_bar(fraction) + "  " + doing);
  };
  const planner::Plan plan = planner::make_plan(profile, plan_options);

  v.category = std::string(planner::category_name(plan.category));
  t.line("planned in " + printf_string("%.1f s", plan.seconds) + "; category " + v.category);
  if (v.profile_device != v.device) {
    t.line("note: the profile was measured on " + v.profile_device + ", not on this " + v.device);
  }
  if (!has_task_benchmarks(profile)) {
    t.line(
        "note: the profile has no task benchmarks: candidates with mk regions are measured but "
        "not predicted, and the planner can only choose all-conventional");
  }

  t.progress("making random weights (seed " + std::to_string(o.seed) + ")");
  const executor::HostWeights weights = executor::HostWeights::random(spec, o.seed);
  executor::RunOptions run_options;
  run_options.runs = o.runs;
  run_options.warmup = o.warmup;

  int unmeasured = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    const int64_t batch = batches[i];
    simulator::Simulator sim(profile);
    const std::vector<model::StageShape> shapes = sim.stage_shapes(batch);
    std::vector<const model::Graph*> graphs;
    for (const model::StageShape& s : shapes) graphs.push_back(&sim.graph(s.name, batch));
    // Seeded by (seed, batch): a batch draws the same compositions whatever else is validated.
    std::seed_seq seq{static_cast<uint32_t>(o.seed), static_cast<uint32_t>(o.seed >> 32),
                      static_cast<uint32_t>(batch)};
    std::mt19937 rng(seq);
    std::vector<model::Composition> random;
    for (int r = 0; r < o.random; ++r) random.push_back(model::random_composition(graphs, rng));

    validation::BatchValidation b;
    b.batch = batch;
    b.notes = plan.batch(batch).notes;
    b.candidates = validation::predict_candidates(
        profile, {}, batch,
        validation::validation_candidates(
            plan.batch(batch), shapes, random, /*with_pdl=*/true,
            cublaslt ? std::optional(model::ProviderChoice::every(graphs)) : std::nullopt));
    t.line(printf_string("batch %lld: %zu candidates", static_cast<long long>(batch),
                         b.candidates.size()));
    measure_batch(spec, model::make_scenario(spec, batch, profile.prompt_len, profile.frames),
                  weights, run_options, shapes, v.profile, device, b.candidates,
                  Sweep{i, batches.size(), start}, t);
    b.metrics = validation::score_batch(b.candidates);
    for (const validation::CandidateResult& c : b.candidates) unmeasured += !c.measured;
    v.batches.push_back(std::move(b));
    write_outputs(v, out);
    print_batch(t, v.batches.back());
  }

  const validation::OverallMetrics overall = validation::score_overall(v.batches);
  t.line(printf_string(
      "overall: TTFO MAPE %s (worst batch %s), decode step MAPE %s over %d candidates; hits %d "
      "of %d; lowest Kendall tau %s; %s",
      percent(overall.ttfo_mape).c_str(), percent(overall.worst_batch_ttfo_mape).c_str(),
      percent(overall.decode_step_mape).c_str(), overall.scored, overall.hits, overall.judged,
      overall.min_kendall_tau ? printf_string("%.3f", *overall.min_kendall_tau).c_str() : "-",
      seconds_text(start).c_str()));
  t.line("validation written to " + (out / "validation.json").string() + " (" +
         std::string(validation::kValidationSchema) + ") and " + (out / "validation.md").string());
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
  cmd->add_option("--model,-m", o->model, "Bundled model name, config.json, or checkpoint dir")
      ->required();
  cmd->add_option("--batch,-b", o->batches, "Batch sizes, e.g. 1,2,4,8,16,32")->required();
  cmd->add_option("--profile", o->profile,
                  "profile.json of this model (default: profile it first, into OUT/profile.json)");
  cmd->add_option("--prompt-len,-p", o->prompt_len,
                  "Prompt length in tokens when profiling (default: 128; with --profile, its own)");
  add_frames_option(cmd, o->frames);
  cmd->add_option("--candidates,-k", o->top_k,
                  "The planner's top K compositions to measure: its best, then its best with at "
                  "least 1/(K-1), ..., all of each stage's ops in mk regions (megacut plan --top)")
      ->capture_default_str();
  cmd->add_option("--random", o->random, "Random compositions to measure per batch")
      ->capture_default_str();
  cmd->add_option("--runs", o->runs, "Timed runs of each candidate")->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Warm-up runs of each candidate")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the random compositions and the random weights")
      ->capture_default_str();
  cmd->add_option("--out,-o", o->out, "Directory for validation.json and validation.md")
      ->required();
  cmd->callback([o] { run(*o); });
}

}  // namespace megacut::app
