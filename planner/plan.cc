#include "planner/plan.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "model/error.h"
#include "model/text.h"

namespace megacut::planner {
namespace {

// Runs fn(0) .. fn(count - 1) on up to `threads` threads; rethrows the first exception once
// all have stopped (the others take no new index after it).
void parallel_for(size_t count, int threads, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex mutex;
  auto worker = [&] {
    for (;;) {
      const size_t i = next++;
      if (i >= count || failed) return;
      try {
        fn(i);
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  const size_t extra = std::min<size_t>(count, std::max(1, threads)) - 1;
  std::vector<std::thread> pool;
  for (size_t t = 0; t < extra; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

// The share of a stage's runs that follow another run at once in the objective's sequence
// (the first output's, or the step's): SearchOptions::hidden_launch_share.
double hidden_launch_share(const model::Scenario& scenario, std::string_view stage,
                           std::optional<Objective> objective) {
  const model::Sequence which =
      objective == Objective::throughput ? model::Sequence::step : model::Sequence::first_output;
  const std::vector<std::string> runs = model::stage_sequence(scenario, which);
  int64_t mine = 0, hidden = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i] != stage) continue;
    ++mine;
    hidden += i > 0;
  }
  return mine > 0 ? static_cast<double>(hidden) / static_cast<double>(mine) : 0.0;
}

bool better(const Evaluated& a, const Evaluated& b, std::optional<Objective> objective) {
  if (objective == Objective::throughput) {
    return std::tie(a.decode_step_ns, a.ttfo_ns) < std::tie(b.decode_step_ns, b.ttfo_ns);
  }
  return std::tie(a.ttfo_ns, a.decode_step_ns) < std::tie(b.ttfo_ns, b.decode_step_ns);
}

BatchPlan plan_batch(const model::Profile& profile, const PlanOptions& options, int top_k,
                     int64_t batch, const std::vector<StageSearch>& searches) {
  simulator::Simulator sim(profile, options.sim);
  const model::Scenario scenario = sim.scenario(batch);
  const std::vector<model::StageShape> shapes = sim.stage_shapes(batch);
  std::vector<double> hidden;  // each search's hidden_launch_share
  for (const StageSearch& s : searches) {
    hidden.push_back(hidden_launch_share(scenario, s.stage, options.objective));
  }

  BatchPlan out;
  out.batch = batch;
  const std::vector<double> floors = coverage_floors(top_k);
  // Each stage at its best, then each stage at its best over a coverage floor: whichever of
  // those are distinct. The stages' keys sum to the objective's first figure (for a TTS
  // pipeline, exactly in the primary objective's sequence), so the first is the best.
  auto add = [&](const std::function<const StageCandidate&(const StageSearch&)>& choice) {
    model::Composition c;
    for (const StageSearch& s : searches) c.stages.push_back({s.stage, choice(s).regions});
    const std::string text = c.to_string();
    for (const Evaluated& e : out.ranked) {
      if (e.text == text) return;
    }
    const simulator::Prediction p = sim.simulate(c, batch);
    if (out.notes.empty()) out.notes = p.notes;
    for (size_t s = 0; s < searches.size(); ++s) {
      const TimeNs searched = choice(searches[s]).key_ns;
      TimeNs simulated = 0;
      for (const auto& r : p.stages[s].regions) simulated += region_key_ns(*r, hidden[s]);
      if (simulated != searched) {
        throw Error("planner: internal error: batch " + std::to_string(batch) + ", stage " +
                    searches[s].stage + ": the search counted '" + text + "' at " +
                    std::to_string(searched) + " ns, the simulator at " +
                    std::to_string(simulated) + " ns");
      }
    }
    out.ranked.push_back(evaluate(p, c));
  };
  add([](const StageSearch& s) -> const StageCandidate& { return s.best.front(); });
  for (size_t j = 0; j < floors.size(); ++j) {
    add([j](const StageSearch& s) -> const StageCandidate& { return s.at_coverage.at(j); });
  }
  std::stable_sort(
      out.ranked.begin(), out.ranked.end(),
      [&](const Evaluated& a, const Evaluated& b) { return better(a, b, options.objective); });
  const auto conv = model::uniform_composition(shapes, model::RegionKind::conv);
  out.all_conv = evaluate(sim.simulate(conv, batch), conv);
  try {
    const auto mk = model::uniform_composition(shapes, model::RegionKind::mk);
    out.all_mk = evaluate(sim.simulate(mk, batch), mk);
  } catch (const Error&) {
    // Some op has no standalone task benchmark: there is no one-megakernel baseline.
  }
  for (const StageSearch& s : searches) out.search.push_back({s.stage, s.stats});
  // The search leaves out the tile regions the profile cannot time (one without the SM limits
  // times none): where a stage has none, say why rather than let their absence pass for a
  // finding.
  std::vector<std::string> without_tile;
  std::string why_not_tile;
  for (const model::StageShape& shape : shapes) {
    std::string why;
    bool timed = false;
    for (int op = 0; op + 2 <= shape.op_count && !timed; ++op) {
      for (simulator::Boundary before :
           {simulator::Boundary::stage_start, simulator::Boundary::after_conv,
            simulator::Boundary::after_mk, simulator::Boundary::after_tile}) {
        if ((op == 0) != (before == simulator::Boundary::stage_start)) continue;
        try {
          sim.simulate_region(shape.name, batch, {model::RegionKind::tile, op, op + 2}, before);
          timed = true;
          break;
        } catch (const Error& e) {
          if (why.empty()) why = e.what();
        }
      }
    }
    if (timed) why.clear();
    if (why.empty()) continue;
    without_tile.push_back(shape.name);
    if (why_not_tile.empty()) why_not_tile = why;
  }
  if (!without_tile.empty()) {
    out.notes.push_back("no tile region in " + model::comma_list(without_tile) + ": " +
                        why_not_tile);
  }
  out.pdl = options.sim.pdl;
  out.providers = sim.provider_choice(batch);
  return out;
}

std::vector<ParetoPoint> pareto_front(const std::vector<BatchPlan>& batches) {
  std::vector<ParetoPoint> points;
  for (const BatchPlan& b : batches) {
    for (size_t i = 0; i < b.ranked.size(); ++i) {
      const Evaluated& e = b.ranked[i];
      points.push_back(
          {b.batch, "rank " + std::to_string(i + 1), e.text, e.ttfo_ns, e.throughput_per_s});
    }
    points.push_back(
        {b.batch, "all-conv", b.all_conv.text, b.all_conv.ttfo_ns, b.all_conv.throughput_per_s});
    if (b.all_mk) {
      points.push_back(
          {b.batch, "all-mk", b.all_mk->text, b.all_mk->ttfo_ns, b.all_mk->throughput_per_s});
    }
  }
  std::vector<ParetoPoint> front;
  for (const ParetoPoint& p : points) {
    bool dominated = false;
    for (const ParetoPoint& q : points) {
      if (q.ttfo_ns <= p.ttfo_ns && q.throughput_per_s >= p.throughput_per_s &&
          (q.ttfo_ns < p.ttfo_ns || q.throughput_per_s > p.throughput_per_s)) {
        dominated = true;
        break;
      }
    }
    // Equal points (a baseline that is also ranked): keep the first.
    const bool repeated = std::any_of(front.begin(), front.end(), [&](const ParetoPoint& q) {
      return q.batch == p.batch && q.text == p.text;
    });
    if (!dominated && !repeated) front.push_back(p);
  }
  std::stable_sort(front.begin(), front.end(), [](const ParetoPoint& a, const ParetoPoint& b) {
    return std::tie(a.ttfo_ns, b.throughput_per_s) < std::tie(b.ttfo_ns, a.throughput_per_s);
  });
  return front;
}

Plan plan_both_launches(const model::Profile& profile, const PlanOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  PlanOptions one = options;
  one.choose_pdl = false;
  Plan plans[2];
  for (int pdl = 0; pdl < 2; ++pdl) {
    one.sim.pdl = pdl == 1;
    if (options.progress) {
      one.progress = [&, pdl](double fraction, const std::string& doing) {
        options.progress((pdl + fraction) / 2, doing + (pdl ? " (PDL)" : ""));
      };
    }
    plans[pdl] = make_plan(profile, one);
  }
  Plan plan = std::move(plans[0]);
  for (size_t b = 0; b < plan.batches.size(); ++b) {
    BatchPlan& plain = plan.batches[b];
    BatchPlan& pdl = plans[1].batches[b];
    const Evaluated& a = settled(plain, options.min_gain, options.objective);
    const Evaluated& p = settled(pdl, options.min_gain, options.objective);
    if (better(p, a, options.objective)) {
      const std::string note = model::printf_string(
          "launched with PDL: predicted TTFO %.3f ms and decode step %.3f ms, against %.3f ms "
          "and %.3f ms without",
          p.ttfo_ns / 1e6, p.decode_step_ns / 1e6, a.ttfo_ns / 1e6, a.decode_step_ns / 1e6);
      plain = std::move(pdl);
      plain.notes.push_back(note);
    }
  }
  plan.pareto = pareto_front(plan.batches);
  plan.category = classify(plan.batches, options.min_gain, options.objective);
  plan.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return plan;
}

}  // namespace

std::vector<double> coverage_floors(int top_k) {
  std::vector<double> floors;
  for (int j = 1; j < top_k; ++j) floors.push_back(static_cast<double>(j) / (top_k - 1));
  return floors;
}

Evaluated evaluate(const simulator::Prediction& p, const model::Composition& composition) {
  Evaluated e;
  e.composition = composition;
  e.text = composition.to_string();
  e.ttfo_ns = p.ttfo_ns;
  e.decode_step_ns = p.decode_step_ns;
  e.throughput_per_s = p.throughput_per_s;
  for (const simulator::StagePrediction& s : p.stages) {
    StageTime t{s.stage, s.time_ns, 0};
    for (const auto& r : s.regions) {
      if (r->region.kind == model::RegionKind::mk) t.mk_ns += r->time_ns;
    }
    e.stages.push_back(std::move(t));
  }
  return e;
}

std::string_view objective_name(Objective objective) {
  return objective == Objective::ttfo ? "ttfo" : "throughput";
}

Objective parse_objective(std::string_view text) {
  if (text == "ttfo") return Objective::ttfo;
  if (text == "throughput") return Objective::throughput;
  throw Error("--objective: '" + std::string(text) +
              "' is not an objective (ttfo: time to first output first; throughput: decode "
              "throughput first)");
}

double Evaluated::coverage(std::string_view stage) const {
  for (const StageTime& s : stages) {
    if (s.stage == stage) {
      return s.time_ns > 0 ? static_cast<double>(s.mk_ns) / static_cast<double>(s.time_ns) : 0.0;
    }
  }
  throw Error("plan: no stage '" + std::string(stage) + "'");
}

double Evaluated::coverage() const {
  TimeNs mk = 0, total = 0;
  for (const StageTime& s : stages) {
    mk += s.mk_ns;
    total += s.time_ns;
  }
  return total > 0 ? static_cast<double>(mk) / static_cast<double>(total) : 0.0;
}

int Evaluated::mk_regions() const {
  int count = 0;
  for (const model::StageRegions& s : composition.stages) {
    for (const model::Region& r : s.regions) count += r.kind == model::RegionKind::mk;
  }
  return count;
}

const BatchPlan& Plan::batch(int64_t batch) const {
  for (const BatchPlan& b : batches) {
    if (b.batch == batch) return b;
  }
  throw Error("plan: no batch " + std::to_string(batch));
}

bool operator==(const Plan& a, const Plan& b) {
  const auto shapes_equal = [](const model::StageShape& x, const model::StageShape& y) {
    return x.name == y.name && x.op_count == y.op_count;
  };
  return a.model == b.model && a.device == b.device && a.sm_count == b.sm_count &&
         a.prompt_len == b.prompt_len && a.profile == b.profile &&
         std::equal(a.stages.begin(), a.stages.end(), b.stages.begin(), b.stages.end(),
                    shapes_equal) &&
         a.objective == b.objective && a.top_k == b.top_k &&
         a.linear_provider == b.linear_provider && a.batches == b.batches && a.pareto == b.pareto &&
         a.category == b.category && a.min_gain == b.min_gain && a.threads == b.threads &&
         a.seconds == b.seconds;
}

Plan make_plan(const model::Profile& profile, const PlanOptions& options) {
  if (options.choose_pdl) return plan_both_launches(profile, options);
  const auto start = std::chrono::steady_clock::now();
  if (options.top_k < 1) {
    throw Error("plan: the number of ranked compositions (--top) must be at least 1, not " +
                std::to_string(options.top_k));
  }
  std::vector<int64_t> batches = options.batches.empty() ? profile.batch_sizes() : options.batches;
  if (batches.empty()) throw Error("plan: profile " + profile.source + " has no batch sizes");
  std::sort(batches.begin(), batches.end());
  for (size_t i = 0; i < batches.size(); ++i) {
    if (batches[i] <= 0)
      throw Error("plan: batch " + std::to_string(batches[i]) + " is not positive");
    if (i > 0 && batches[i] == batches[i - 1]) {
      throw Error("plan: batch " + std::to_string(batches[i]) + " is listed twice");
    }
    model::check_batch(profile, batches[i], options.sim.allow_interpolate);
  }

  Plan plan;
  simulator::Simulator sim(profile, options.sim);
  const model::Scenario scenario = sim.scenario(batches.front());
  plan.model = profile.model_name;
  plan.device = profile.device.name;
  plan.sm_count = profile.device.sm_count;
  plan.prompt_len = profile.prompt_len;
  plan.tp = profile.tp;
  plan.profile = profile.source;
  plan.linear_provider = options.sim.linear_provider;
  plan.objective = options.objective;
  // A coverage floor counts ops in mk regions: once K - 1 reaches a stage's op count, every
  // count is a floor of its own, and a larger K ranks the same compositions.
  int most_ops = 0;
  for (const model::StageShape& s : sim.stage_shapes(batches.front())) {
    most_ops = std::max(most_ops, s.op_count);
  }
  plan.top_k = std::min(options.top_k, most_ops + 1);
  const int asked = options.threads > 0
                        ? options.threads
                        : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));

  // Searches, one per (batch, stage), the largest graphs first (more tokens, more tasks) so that
  // the last ones to finish are short.
  struct Job {
    size_t batch = 0;
    size_t stage = 0;
  };
  std::vector<Job> jobs;
  for (size_t s = 0; s < scenario.stages.size(); ++s) {
    for (size_t b = 0; b < batches.size(); ++b) jobs.push_back({b, s});
  }
  // No more threads than searches: the rest would have nothing to do (the plan says what ran).
  const int threads = static_cast<int>(std::min<size_t>(asked, jobs.size()));
  plan.threads = threads;
  std::stable_sort(jobs.begin(), jobs.end(), [&](const Job& x, const Job& y) {
    return batches[x.batch] * scenario.stages[x.stage].seq_len >
           batches[y.batch] * scenario.stages[y.stage].seq_len;
  });
  std::vector<std::vector<StageSearch>> searches(batches.size(),
                                                 std::vector<StageSearch>(scenario.stages.size()));
  std::mutex progress_mutex;
  std::vector<double> done(jobs.size() + batches.size(), 0);
  // Searches count 90% of the work, the end-to-end simulations of each batch the rest.
  auto report = [&](size_t unit, double fraction, const std::string& doing) {
    if (!options.progress) return;
    std::lock_guard lock(progress_mutex);
    done[unit] = fraction;
    double total = 0;
    for (size_t i = 0; i < done.size(); ++i) {
      total += done[i] * (i < jobs.size() ? 0.9 / static_cast<double>(jobs.size())
                                          : 0.1 / static_cast<double>(batches.size()));
    }
    options.progress(total, doing);
  };
  parallel_for(jobs.size(), threads, [&](size_t j) {
    const Job job = jobs[j];
    const int64_t batch = batches[job.batch];
    const std::string& stage = scenario.stages[job.stage].name;
    const std::string doing = "batch " + std::to_string(batch) + " " + stage;
    // A simulator per search: not thread-safe, and its caches are of no use to other stages.
    simulator::Simulator local(profile, options.sim);
    SearchOptions so;
    so.top_k = 1;
    so.coverage_floors = coverage_floors(plan.top_k);
    so.hidden_launch_share = hidden_launch_share(scenario, stage, options.objective);
    so.progress = [&, j, doing](double f) { report(j, f, doing); };
    searches[job.batch][job.stage] = search_stage(local, stage, batch, so);
  });
  plan.batches.resize(batches.size());
  parallel_for(batches.size(), threads, [&](size_t b) {
    const std::string doing = "batch " + std::to_string(batches[b]) + " end to end";
    report(jobs.size() + b, 0, doing);
    plan.batches[b] = plan_batch(profile, options, plan.top_k, batches[b], searches[b]);
    report(jobs.size() + b, 1, doing);
  });
  for (const StageSearch& s : searches.front()) {
    plan.stages.push_back({s.stage, static_cast<int>(s.stats.ops)});
  }
  plan.pareto = pareto_front(plan.batches);
  plan.min_gain = options.min_gain;
  plan.category = classify(plan.batches, options.min_gain, options.objective);
  plan.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return plan;
}

}  // namespace megacut::planner
