#include "validation/sweep.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <set>
#include <thread>

#include "executor/device.h"
#include "executor/megakernel_codegen.h"
#include "executor/runner.h"
#include "model/batch_list.h"
#include "model/error.h"
#include "model/output_file.h"
#include "model/random_composition.h"
#include "model/text.h"
#include "planner/plan.h"
#include "profiler/profiler.h"

namespace megacut::validation {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using model::printf_string;

double seconds_since(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

void note(const SweepListener& listener, const std::string& text) {
  if (listener.note) listener.note(text);
}

void progress(const SweepListener& listener, const std::string& text) {
  if (listener.progress) listener.progress(text);
}

void write_outputs(const Validation& v, const fs::path& dir) {
  model::write_text_file(dir / "validation.json", validation_to_json(v).dump(1) + "\n");
  model::write_text_file(dir / "validation.md", validation_markdown(v));
}

// Whether the profile measured cuBLASLt's kernels: beside ours, or in place of them (a profile of
// the former `megacut profile --provider cublaslt`).
bool has_cublaslt_kernels(const model::Profile& profile) {
  for (const model::BatchProfile& b : profile.batches) {
    for (const model::StageProfile& s : b.stages) {
      for (const model::OpProfile& op : s.ops) {
        if (op.conv_cublaslt || (op.conv && op.conv->provider == "cublas")) return true;
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

model::Profile profile_model(const SweepOptions& o, const fs::path& out,
                             const SweepListener& listener) {
  profiler::ProfileOptions options;
  options.model = o.model;
  options.batches = o.batches;
  options.prompt_len = o.prompt_len > 0 ? o.prompt_len : model::kDefaultPromptLen;
  options.frames = o.frames;
  options.seed = o.seed;
  options.out = out;
  size_t done = 0;
  profiler::ProfileListener profile_listener;
  profile_listener.note = [&](const std::string& text) { note(listener, text); };
  profile_listener.progress = [&](const std::string& phase, int step, int steps) {
    progress(listener,
             printf_string("profiling batch %lld (%zu of %zu): %s %d/%d",
                           static_cast<long long>(o.batches[std::min(done, o.batches.size() - 1)]),
                           done + 1, o.batches.size(), phase.c_str(), step, steps));
  };
  profile_listener.batch_done = [&](const profiler::BatchSummary& b) {
    note(
        listener,
        printf_string("profiled batch %lld: TTFO p50 %.4f ms (its stage runs, each replayed alone)",
                      static_cast<long long>(b.batch), b.ttfo_untraced_ms.p50));
    ++done;
  };
  note(listener, "profiling " + o.model + " into " + out.string() + " (as megacut profile does)");
  return profiler::run_profile(options, profile_listener);
}

// The profile the options name, checked against them and the model.
model::Profile read_checked_profile(const SweepOptions& o, const model::ModelSpec& spec) {
  model::Profile profile = model::read_profile(o.profile);
  if (profile.model_name != spec.name) {
    throw Error("--profile: " + o.profile + " is a profile of " + profile.model_name + ", not of " +
                spec.name);
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
  if (profile.tp != 1) {
    throw Error("--profile: " + o.profile + " holds one rank's graphs of " +
                model::gpu_count_text(profile.tp) +
                " (tensor parallel); megacut validate builds and measures on one GPU");
  }
  for (int64_t b : o.batches) model::check_batch(profile, b, /*allow_interpolate=*/false);
  return profile;
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
                const std::vector<CandidateResult>& candidates, int arch,
                const SweepListener& listener) {
  std::set<std::string> sources;
  for (const CandidateResult& c : candidates) {
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
  note(listener,
       printf_string("  %zu region kernels compiled or found in the cache in %s on %u threads%s",
                     compiled.load(), seconds_text(seconds_since(start)).c_str(), threads,
                     failed > 0 ? printf_string(", %zu failed", failed.load()).c_str() : ""));
}

struct Sweep {
  size_t batch_index = 0;
  size_t batches = 0;
  Clock::time_point start = Clock::now();
};

// Builds and times every candidate of one batch: the runner made once per PDL setting (the
// candidates without PDL first), the kernels compiled up front.
void measure_batch(const model::ModelSpec& spec, const model::Scenario& scenario,
                   const executor::HostWeights& weights, executor::RunOptions options,
                   const std::vector<model::StageShape>& shapes, const std::string& profile,
                   const executor::DeviceInfo& device, std::vector<CandidateResult>& candidates,
                   const Sweep& sweep, const SweepListener& listener) {
  std::vector<size_t> order(candidates.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return candidates[a].candidate.pdl < candidates[b].candidate.pdl;
  });
  std::unique_ptr<executor::ScenarioRunner> runner;
  for (size_t n = 0; n < order.size(); ++n) {
    CandidateResult& c = candidates[order[n]];
    const std::string what = "batch " + std::to_string(scenario.batch) + ", candidate " +
                             std::to_string(order[n] + 1) + " (" + c.candidate.label() + ", '" +
                             c.candidate.text + "'" + (c.candidate.pdl ? " with PDL" : "") + ")";
    progress(listener,
             printf_string("batch %lld (%zu of %zu) · candidate %zu of %zu (%s) · %s elapsed",
                           static_cast<long long>(scenario.batch), sweep.batch_index + 1,
                           sweep.batches, n + 1, order.size(), c.candidate.label().c_str(),
                           seconds_text(seconds_since(sweep.start)).c_str()));
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
      if (n == 0) precompile(*runner, candidates, device.arch, listener);
    }
    try {
      runner->set_providers(c.candidate.providers);
      runner->set_composition(c.candidate.composition);
      const executor::Measurement m = runner->measure();
      c.measured = Measured{m.ttfo, m.decode_step};
    } catch (const Error& e) {
      c.measurement_error = e.what();
      note(listener, "  " + what + ": not measured: " + e.what());
    }
    if (listener.candidate_done) {
      listener.candidate_done(c, order[n], candidates.size(), seconds_since(start));
    }
  }
}

}  // namespace

std::string seconds_text(double s) {
  return s < 60 ? printf_string("%.1f s", s)
                : printf_string("%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
}

Validation run_sweep(const SweepOptions& o, const SweepListener& listener) {
  if (o.batches.empty()) throw Error("--batch: give at least one batch size");
  if (o.top_k < 1) throw Error("--candidates: must be at least 1");
  if (o.random < 0) throw Error("--random: must not be negative");
  if (o.runs < 1) throw Error("--runs: must be at least 1");
  if (o.warmup < 0) throw Error("--warmup: must not be negative");
  if (o.prompt_len < 0)
    throw Error("--prompt-len: must not be negative (0: the default), not " +
                std::to_string(o.prompt_len));
  if (o.out.empty()) throw Error("--out: the validation needs a directory to go to");
  const model::ModelSpec spec = model::load_model(o.model);
  model::Profile profile;
  if (!o.profile.empty()) profile = read_checked_profile(o, spec);
  const executor::DeviceInfo device = executor::current_device();
  std::error_code error;
  fs::create_directories(o.out, error);
  if (error) {
    throw Error("--out: cannot make directory " + o.out.string() + " (" + error.message() + ")");
  }
  const Clock::time_point start = Clock::now();
  if (o.profile.empty()) profile = profile_model(o, o.out / "profile.json", listener);

  Validation v;
  v.model = spec.name;
  v.device = device.name;
  v.profile = o.profile.empty() ? (o.out / "profile.json").string() : o.profile;
  v.profile_device = profile.device.name;
  v.prompt_len = profile.prompt_len;
  v.provider = std::string(model::policy_name(model::ProviderPolicy::fastest));
  const bool cublaslt = has_cublaslt_kernels(profile);
  v.runs = o.runs;
  v.warmup = o.warmup;
  v.seed = o.seed;
  v.top_k = o.top_k;
  v.random = o.random;

  note(listener,
       printf_string(
           "megacut validate: %s on %s · batches %s · profile %s (%s) · planner's top %d, one mk "
           "per stage, conv with and without PDL, %d random (seed %llu) · %d warm-up and %d "
           "timed runs each · linear providers: %s",
           spec.name.c_str(), device.name.c_str(), model::comma_list(o.batches).c_str(),
           v.profile.c_str(), v.profile_device.c_str(), o.top_k, o.random,
           static_cast<unsigned long long>(o.seed), o.warmup, o.runs,
           cublaslt ? "the plan's, per op the faster; conv with cuBLASLt's too"
                    : "ours (the profile has no cuBLASLt kernels)"));

  planner::PlanOptions plan_options;
  plan_options.batches = o.batches;
  plan_options.top_k = o.top_k;
  plan_options.objective = planner::Objective::ttfo;
  plan_options.sim.linear_provider = model::ProviderPolicy::fastest;
  plan_options.progress = [&](double fraction, const std::string& doing) {
    progress(listener, printf_string("planning %3.0f%%  ", 100 * fraction) + doing);
  };
  const planner::Plan plan = planner::make_plan(profile, plan_options);
  v.category = std::string(planner::category_name(plan.category));
  note(listener,
       "planned in " + printf_string("%.1f s", plan.seconds) + "; category " + v.category);
  if (v.profile_device != v.device) {
    note(listener,
         "note: the profile was measured on " + v.profile_device + ", not on this " + v.device);
  }
  if (!has_task_benchmarks(profile)) {
    note(listener,
         "note: the profile has no task benchmarks: candidates with mk regions are measured but "
         "not predicted, and the planner can only choose all-conventional");
  }

  progress(listener, "making random weights (seed " + std::to_string(o.seed) + ")");
  const executor::HostWeights weights = executor::HostWeights::random(spec, o.seed);
  executor::RunOptions run_options;
  run_options.runs = o.runs;
  run_options.warmup = o.warmup;

  for (size_t i = 0; i < o.batches.size(); ++i) {
    const int64_t batch = o.batches[i];
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

    BatchValidation b;
    b.batch = batch;
    b.notes = plan.batch(batch).notes;
    b.candidates = predict_candidates(
        profile, {}, batch,
        validation_candidates(
            plan.batch(batch), shapes, random, /*with_pdl=*/true,
            cublaslt ? std::optional(model::ProviderChoice::every(graphs)) : std::nullopt));
    note(listener, printf_string("batch %lld: %zu candidates", static_cast<long long>(batch),
                                 b.candidates.size()));
    measure_batch(spec, model::make_scenario(spec, batch, profile.prompt_len, profile.frames),
                  weights, run_options, shapes, v.profile, device, b.candidates,
                  Sweep{i, o.batches.size(), start}, listener);
    b.metrics = score_batch(b.candidates);
    v.batches.push_back(std::move(b));
    write_outputs(v, o.out);
    if (listener.batch_done) listener.batch_done(v.batches.back());
  }
  return v;
}

}  // namespace megacut::validation
