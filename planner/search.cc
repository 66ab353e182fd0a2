#include "planner/search.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <queue>

#include "model/error.h"
#include "planner/region_costs.h"

namespace megacut::planner {
namespace {

using model::Region;
using model::RegionKind;
using simulator::Boundary;

constexpr TimeNs kInf = std::numeric_limits<TimeNs>::max() / 4;

// What ran before a region: the index of its cost in the per-op tables below.
enum Before : int { kStart = 0, kAfterConv = 1, kAfterMk = 2 };
constexpr std::array<Boundary, 3> kBoundary = {Boundary::stage_start, Boundary::after_conv,
                                               Boundary::after_mk};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One way to reach a DP state: the cost so far and the state it came from (position, kind of
// the region ending there, rank in that state's list).
struct Entry {
  TimeNs cost = kInf;
  int from = 0;
  int8_t from_kind = 0;  // kStart, or the kind of the region ending at `from` (1 conv, 2 mk)
  int from_rank = 0;
  auto key() const { return std::tie(cost, from, from_kind, from_rank); }
  bool operator<(const Entry& other) const { return key() < other.key(); }
};

// Keeps the k best of `entries`, sorted.
void keep_best(std::vector<Entry>& entries, int k) {
  if (static_cast<int>(entries.size()) > k) {
    std::nth_element(entries.begin(), entries.begin() + k, entries.end());
    entries.resize(k);
  }
  std::sort(entries.begin(), entries.end());
}

class StageSearcher {
 public:
  StageSearcher(simulator::Simulator& sim, std::string_view stage, int64_t batch,
                const SearchOptions& options)
      : sim_(sim),
        stage_(stage),
        batch_(batch),
        options_(options),
        n_(sim.graph(stage, batch).op_count()),
        evaluator_(sim, stage, batch) {
    evaluator_.set_resume(options.resume);
  }

  StageSearch run() {
    const auto start = std::chrono::steady_clock::now();
    if (options_.top_k < 1) throw Error("search: top K must be at least 1");
    for (double share : options_.coverage_floors) {
      if (!(share > 0 && share <= 1)) {
        throw Error("search: a coverage floor must be in (0, 1], not " + std::to_string(share));
      }
    }
    // A floor's best may take any mk region, and the bounds of long ones are too weak to
    // rule them out for the higher floors (their best over short regions pays many launches).
    const bool prune = options_.prune && options_.coverage_floors.empty();
    measure_single_ops();
    report(0.02);

    // 1. Short mk regions, exactly; the K best compositions from them bound the K-th best.
    std::vector<std::vector<int>> ends(n_);
    for (int a = 0; a < n_; ++a) {
      const int last = prune ? std::min(mk_limit_[a], a + kShortRegionOps) : mk_limit_[a];
      for (int b = a + 2; b <= last; ++b) ends[a].push_back(b);
    }
    evaluate(ends, 0.02, prune ? 0.1 : 0.98);
    std::vector<StageCandidate> best = k_best(options_.top_k);

    // 2-5. Bounds for the longer regions; simulate those that can still be in the K best.
    if (prune) {
      const TimeNs upper =
          static_cast<int>(best.size()) == options_.top_k ? best.back().key_ns : kInf;
      bound_all();
      for (int a = 0; a < n_; ++a) {
        ends[a].clear();
        const TimeNs before = best_prefix_bound(a);
        if (before >= kInf) continue;
        for (int b = a + kShortRegionOps + 1; b <= mk_limit_[a]; ++b) {
          if (add(add(before, lb_[a][b - a - 1]), suffix_[b][kAfterMk]) <= upper) {
            ends[a].push_back(b);
          }
        }
      }
      bound_locally();
      evaluate_in_order(ends, 0.1, 0.98);
      best = k_best(options_.top_k);
    }
    if (best.empty()) {
      throw Error("stage " + stage_ + " at batch " + std::to_string(batch_) +
                  ": no composition can be simulated (some op has neither a conventional "
                  "kernel nor a standalone task benchmark in the profile)");
    }

    StageSearch out;
    out.stage = stage_;
    out.batch = batch_;
    out.best = std::move(best);
    // A floor's best is the unconstrained best, or a lower floor's, where that one already
    // has the ops (several compositions can tie: this keeps the one found first). Only the
    // floors that searched are looked at: a reused one is a copy of an earlier one, so the
    // first found is the same, and a --top of 10^5 floors costs as many searches as there are
    // distinct op counts, not 10^10 comparisons.
    std::vector<size_t> searched;  // indices into at_coverage of the floors that searched
    for (double share : options_.coverage_floors) {
      const int64_t least = min_mk_ops(share, single_mk_ops_);
      const StageCandidate* found = nullptr;
      if (model::mk_op_count(out.best.front().regions) >= least) found = &out.best.front();
      for (size_t j : searched) {
        if (found) break;
        if (options_.coverage_floors[j] <= share &&
            model::mk_op_count(out.at_coverage[j].regions) >= least) {
          found = &out.at_coverage[j];
        }
      }
      if (!found) searched.push_back(out.at_coverage.size());
      StageCandidate c = found ? *found : best_covering(least);
      out.at_coverage.push_back(std::move(c));
    }
    out.stats.ops = n_;
    out.stats.mk_ops = single_mk_ops_;
    for (int a = 0; a < n_; ++a) out.stats.mk_regions += mk_limit_[a] - a;
    out.stats.mk_simulated = evaluator_.stats().regions + single_mk_ops_;
    out.stats.mk_resumed = evaluator_.stats().resumed;
    out.stats.tasks_simulated = evaluator_.stats().tasks + single_mk_tasks_;
    out.stats.seconds = seconds_since(start);
    report(1.0);
    return out;
  }

 private:
  void report(double fraction) const {
    if (options_.progress) options_.progress(fraction);
  }

  // Every op alone, both ways, after each boundary it can follow. An op the profile cannot
  // time one way (no conventional kernel, no task benchmark) is never run that way.
  void measure_single_ops() {
    const model::Graph& g = sim_.graph(stage_, batch_);
    conv_.assign(n_, {kInf, kInf, kInf});
    overhead_.assign(n_, {kInf, kInf, kInf});
    makespan_.resize(n_);
    std::vector<char> mk_ok(n_, 0);
    for (int i = 0; i < n_; ++i) {
      makespan_[i].assign(n_ - i, -1);
      for (int before : {kStart, kAfterConv, kAfterMk}) {
        if ((i == 0) != (before == kStart)) continue;
        try {
          conv_[i][before] =
              region_key_ns(*sim_.simulate_region(stage_, batch_, {RegionKind::conv, i, i + 1},
                                                  kBoundary[before]),
                            options_.hidden_launch_share);
        } catch (const Error&) {
        }
        try {
          const auto r =
              sim_.simulate_region(stage_, batch_, {RegionKind::mk, i, i + 1}, kBoundary[before]);
          // An mk region is one graph node whatever its ops: its launch share is the same.
          overhead_[i][before] = region_key_ns(*r, options_.hidden_launch_share) - r->work_ns;
          makespan_[i][0] = r->work_ns;
          mk_ok[i] = 1;
        } catch (const Error&) {
        }
      }
    }
    mk_limit_.assign(n_, 0);
    for (int a = n_ - 1; a >= 0; --a) {
      mk_limit_[a] = !mk_ok[a] ? a : (a + 1 < n_ ? std::max(a + 1, mk_limit_[a + 1]) : n_);
    }
    // Per op: what its standalone tasks cost, for the lower bounds.
    const double bandwidth = sim_.profile().device.copy_bandwidth_gb_per_s;
    bytes_ns_.assign(n_ + 1, 0);
    work_ns_.assign(n_ + 1, 0);
    longest_ns_.assign(n_, 0);
    for (int i = 0; i < n_; ++i) {
      double bytes = 0, work = 0;
      if (mk_ok[i]) {
        const simulator::TaskCosts c =
            sim_.region_task_costs(stage_, batch_, {RegionKind::mk, i, i + 1});
        for (size_t t = 0; t < c.fixed_ns.size(); ++t) {
          const double move = c.bytes[t] / bandwidth;
          bytes += move;
          work += static_cast<double>(c.fixed_ns[t]) + move;
          longest_ns_[i] = std::max(longest_ns_[i], static_cast<double>(c.fixed_ns[t]) + move);
        }
        ++single_mk_ops_;
        single_mk_tasks_ += g.op(i).tiling.count();
      }
      bytes_ns_[i + 1] = bytes_ns_[i] + bytes;
      work_ns_[i + 1] = work_ns_[i] + work;
    }
  }

  // A lower bound on the makespan of mk[a:b]: all bytes pass the shared bandwidth; every SM
  // is busy at most the whole time, and a task occupies its SM for its fixed time plus at
  // least its bytes at the full bandwidth; and no task is shorter than that. Rounded down,
  // with a margin for the engine's floating-point bandwidth clock.
  static TimeNs lower_bound(double bytes_ns, double work_per_sm_ns, double longest_ns) {
    const double bound = std::max({bytes_ns, work_per_sm_ns, longest_ns});
    return std::max<TimeNs>(0, static_cast<TimeNs>(std::floor(bound * (1 - 1e-9))) - 2);
  }

  // The cheapest way into an mk region starting at a, given prefix bounds.
  TimeNs best_prefix_bound(int a) const {
    if (a == 0) return overhead_[0][kStart];
    return std::min(add(prefix_[a][kAfterConv], overhead_[a][kAfterConv]),
                    add(prefix_[a][kAfterMk], overhead_[a][kAfterMk]));
  }

  static TimeNs add(TimeNs x, TimeNs y) { return x >= kInf || y >= kInf ? kInf : x + y; }

  // Lower bounds on the best prefix into, and the best suffix out of, every state, with exact
  // mk costs where simulated and lower bounds elsewhere. prefix_[b][k]: a path from the stage
  // start to cut b whose last region is conv (k = kAfterConv) or mk (kAfterMk); suffix_[b][k]:
  // from cut b after such a region to the stage end (k = kStart at b = 0).
  void bound_all() {
    const double sms = sim_.profile().device.sm_count;
    lb_.resize(n_);
    for (int a = 0; a < n_; ++a) {
      lb_[a].assign(mk_limit_[a] - a, kInf);
      double longest = 0;
      for (int b = a + 1; b <= mk_limit_[a]; ++b) {
        longest = std::max(longest, longest_ns_[b - 1]);
        const TimeNs known = makespan_[a][b - a - 1];
        lb_[a][b - a - 1] = known >= 0 ? known
                                       : lower_bound(bytes_ns_[b] - bytes_ns_[a],
                                                     (work_ns_[b] - work_ns_[a]) / sms, longest);
      }
    }
    prefix_.assign(n_ + 1, {kInf, kInf, kInf});
    for (int b = 1; b <= n_; ++b) {
      prefix_[b][kAfterConv] =
          b == 1 ? conv_[0][kStart]
                 : std::min(add(prefix_[b - 1][kAfterConv], conv_[b - 1][kAfterConv]),
                            add(prefix_[b - 1][kAfterMk], conv_[b - 1][kAfterMk]));
      TimeNs best = kInf;
      for (int a = 0; a < b; ++a) {
        if (b <= mk_limit_[a]) best = std::min(best, add(best_prefix_bound(a), lb_[a][b - a - 1]));
      }
      prefix_[b][kAfterMk] = best;
    }
    suffix_.assign(n_ + 1, {kInf, kInf, kInf});
    suffix_[n_] = {0, 0, 0};
    for (int b = n_ - 1; b >= 0; --b) {
      for (int k : {kStart, kAfterConv, kAfterMk}) {
        if ((b == 0) != (k == kStart)) continue;
        TimeNs best = add(conv_[b][k], suffix_[b + 1][kAfterConv]);
        for (int c = b + 1; c <= mk_limit_[b]; ++c) {
          best = std::min(best, add(add(overhead_[b][k], lb_[b][c - b - 1]), suffix_[c][kAfterMk]));
        }
        suffix_[b][k] = best;
      }
    }
  }

  // Simulates mk[a:b] for every b in ends[a]; progress runs from `from` to `to`, by tasks.
  void evaluate(const std::vector<std::vector<int>>& ends, double from, double to) {
    const model::Graph& g = sim_.graph(stage_, batch_);
    auto tasks_to = [&](int a, int b) {
      return static_cast<double>(g.first_task(b - 1) + g.op(b - 1).tiling.count() -
                                 g.first_task(a));
    };
    double total = 0, done = 0;
    for (int a = 0; a < n_; ++a) {
      if (!ends[a].empty()) total += tasks_to(a, ends[a].back());
    }
    for (int a = 0; a < n_; ++a) {
      if (ends[a].empty()) continue;
      const std::vector<TimeNs> m = evaluator_.makespans(a, ends[a]);
      for (size_t i = 0; i < m.size(); ++i) makespan_[a][ends[a][i] - a - 1] = m[i];
      done += tasks_to(a, ends[a].back());
      report(from + (to - from) * done / std::max(1.0, total));
    }
  }

  // Bounds from the K best prefixes over short regions (lists_ after step 1), which are real
  // compositions, so their K-th best times bound the true K-th best from above:
  //  - an mk region ending at b is of no use when even a lower bound on the prefixes through
  //    it exceeds local_upper_[b]: the K-th best prefix ending in mk at b, or the K-th best
  //    ending in conv there plus what any continuation can cost more after conv than after mk
  //    (delta): either way K compositions beat every one through it;
  //  - when a run from a reaches b at time `now`, every task of ops [b, e) starts no earlier,
  //    so a prefix through region [a, e), e > b, costs at least the best prefix into a plus
  //    now plus the bound on [b, e)'s tasks; it is of no use when that exceeds the K-th best
  //    prefix into b extended by conv to e, plus delta. rest_[b] is the least, over e, of the
  //    bound less the extension and delta: when the best prefix into a plus now plus rest_[b]
  //    exceeds any_upper_[b], the run can stop.
  void bound_locally() {
    const int k = options_.top_k;
    auto kth = [&](const std::vector<Entry>& list) {
      return static_cast<int>(list.size()) == k ? list[k - 1].cost : kInf;
    };
    // What a continuation from cut b may cost more after a conv region than after an mk one.
    std::vector<TimeNs> delta(n_ + 1, 0);
    for (int b = 1; b < n_; ++b) {
      for (const auto& cost : {conv_[b], overhead_[b]}) {
        if (cost[kAfterMk] >= kInf) continue;  // no continuation starts that way
        delta[b] =
            cost[kAfterConv] >= kInf ? kInf : std::max(delta[b], cost[kAfterConv] - cost[kAfterMk]);
      }
    }
    local_upper_.assign(n_ + 1, kInf);
    any_upper_.assign(n_ + 1, kInf);
    for (int b = 1; b <= n_; ++b) {
      local_upper_[b] = std::min(kth(lists_[1][b]), add(kth(lists_[0][b]), delta[b]));
      std::vector<Entry> both = lists_[0][b];
      both.insert(both.end(), lists_[1][b].begin(), lists_[1][b].end());
      keep_best(both, k);
      any_upper_[b] = kth(both);
    }
    const double sms = sim_.profile().device.sm_count;
    rest_.assign(n_ + 1, -kInf);
    for (int b = 1; b < n_; ++b) {
      TimeNs extension = std::max(conv_[b][kAfterConv], conv_[b][kAfterMk]);
      TimeNs least = kInf;
      double longest = 0;
      for (int e = b + 1; e <= mk_limit_[b]; ++e) {
        longest = std::max(longest, longest_ns_[e - 1]);
        if (e > b + 1) extension = add(extension, conv_[e - 1][kAfterConv]);
        if (extension >= kInf || delta[e] >= kInf) {
          least = -kInf;
          break;
        }
        const TimeNs bound =
            lower_bound(bytes_ns_[e] - bytes_ns_[b], (work_ns_[e] - work_ns_[b]) / sms, longest);
        least = std::min(least, bound - extension - delta[e]);
      }
      rest_[b] = least;
    }
  }

  // Simulates mk[a:b] for every b in ends[a], a in increasing order, keeping the best prefix
  // into every cut over the regions simulated so far (exact: every region into cut a was
  // simulated or shown useless before a is reached), which with the local bounds lets a run
  // drop regions, or stop, once they cannot be in the K best.
  void evaluate_in_order(const std::vector<std::vector<int>>& ends, double from, double to) {
    const model::Graph& g = sim_.graph(stage_, batch_);
    double total = 0, done = 0;
    for (int a = 0; a < n_; ++a) {
      if (!ends[a].empty()) {
        total += static_cast<double>(g.first_task(ends[a].back()) - g.first_task(a));
      }
    }
    std::vector<TimeNs> best_conv(n_ + 1, kInf), best_mk(n_ + 1, kInf);
    for (int a = 0; a < n_; ++a) {
      if (a == 1) best_conv[1] = conv_[0][kStart];
      if (a > 1) {
        best_conv[a] = std::min(add(best_conv[a - 1], conv_[a - 1][kAfterConv]),
                                add(best_mk[a - 1], conv_[a - 1][kAfterMk]));
      }
      const TimeNs into = a == 0 ? overhead_[0][kStart]
                                 : std::min(add(best_conv[a], overhead_[a][kAfterConv]),
                                            add(best_mk[a], overhead_[a][kAfterMk]));
      if (!ends[a].empty() && into < kInf) {
        auto filter = [&](int b, TimeNs now, TimeNs floor) {
          const bool useless = add(into, floor) > local_upper_[b];
          const bool rest_useless =
              rest_[b] > -kInf && b < n_ && add(into, now) + rest_[b] > any_upper_[b];
          using simulator::PrefixChoice;
          if (rest_useless) return useless ? PrefixChoice::stop : PrefixChoice::run_then_stop;
          return useless ? PrefixChoice::skip : PrefixChoice::run;
        };
        const std::vector<TimeNs> m = evaluator_.makespans(a, ends[a], filter);
        for (size_t i = 0; i < m.size(); ++i) makespan_[a][ends[a][i] - a - 1] = m[i];
        done += static_cast<double>(g.first_task(ends[a].back()) - g.first_task(a));
        report(from + (to - from) * done / std::max(1.0, total));
      }
      for (int b = a + 1; b <= mk_limit_[a]; ++b) {
        const TimeNs m = makespan_[a][b - a - 1];
        if (m >= 0) best_mk[b] = std::min(best_mk[b], add(into, m));
      }
    }
  }

  // The K best compositions over the mk regions simulated so far.
  std::vector<StageCandidate> k_best(int k) {
    // lists[kind][b], kind 0 conv, 1 mk: the k best ways to reach cut b with that kind last.
    std::array<std::vector<std::vector<Entry>>, 2>& lists = lists_;
    lists[0].assign(n_ + 1, {});
    lists[1].assign(n_ + 1, {});
    std::vector<Entry> candidates;
    auto extend = [&](int a, const std::array<TimeNs, 3>& cost, TimeNs extra,
                      std::vector<Entry>& out) {
      if (a == 0) {
        if (cost[kStart] < kInf) out.push_back({cost[kStart] + extra, 0, kStart, 0});
        return;
      }
      for (int kind = 0; kind < 2; ++kind) {
        const int before = kind == 0 ? kAfterConv : kAfterMk;
        if (cost[before] >= kInf) continue;
        const std::vector<Entry>& from = lists[kind][a];
        for (int r = 0; r < static_cast<int>(from.size()); ++r) {
          out.push_back({from[r].cost + cost[before] + extra, a, static_cast<int8_t>(before), r});
        }
      }
    };
    for (int b = 1; b <= n_; ++b) {
      candidates.clear();
      extend(b - 1, conv_[b - 1], 0, candidates);
      keep_best(candidates, k);
      lists[0][b] = candidates;
      candidates.clear();
      for (int a = 0; a < b; ++a) {
        if (b > mk_limit_[a]) continue;
        const TimeNs m = makespan_[a][b - a - 1];
        if (m >= 0) extend(a, overhead_[a], m, candidates);
      }
      keep_best(candidates, k);
      lists[1][b] = candidates;
    }
    std::vector<std::pair<Entry, int>> ends;  // entry, kind
    for (int kind = 0; kind < 2; ++kind) {
      for (int r = 0; r < static_cast<int>(lists[kind][n_].size()); ++r) {
        ends.push_back({lists[kind][n_][r], kind});
      }
    }
    std::sort(ends.begin(), ends.end(), [](const auto& x, const auto& y) {
      return std::tie(x.first, x.second) < std::tie(y.first, y.second);
    });
    std::vector<StageCandidate> out;
    for (int i = 0; i < std::min<int>(k, static_cast<int>(ends.size())); ++i) {
      StageCandidate c;
      c.key_ns = ends[i].first.cost;
      // Walk back: each step is one region (mk) or one op of a conv region.
      int b = n_, kind = ends[i].second;
      Entry e = ends[i].first;
      std::vector<Region> steps;
      for (;;) {
        steps.push_back({kind == 0 ? RegionKind::conv : RegionKind::mk, e.from, b});
        if (e.from_kind == kStart) break;
        b = e.from;
        kind = e.from_kind == kAfterConv ? 0 : 1;
        e = lists[kind][b][e.from_rank];
      }
      std::reverse(steps.begin(), steps.end());
      for (const Region& r : steps) {
        if (r.kind == RegionKind::conv && !c.regions.empty() &&
            c.regions.back().kind == RegionKind::conv) {
          c.regions.back().end = r.end;
        } else {
          c.regions.push_back(r);
        }
      }
      out.push_back(std::move(c));
    }
    return out;
  }

  // The best composition with at least `floor` ops in mk regions, over the mk regions
  // simulated (every one, when coverage floors are asked for). States: (cut b, kind of the
  // region ending there, ops in mk regions before b capped at the floor).
  StageCandidate best_covering(int64_t floor) const {
    const int f = static_cast<int>(floor);
    struct Way {
      TimeNs cost = kInf;
      int from = 0;          // the cut it came from
      int8_t from_kind = 0;  // kStart, kAfterConv or kAfterMk: the state it came from
      int from_ops = 0;
    };
    // ways[kind][b * (f + 1) + ops], kind 0 conv, 1 mk.
    std::array<std::vector<Way>, 2> ways;
    for (auto& w : ways) w.assign(static_cast<size_t>(n_ + 1) * (f + 1), {});
    auto at = [&](int kind, int b, int ops) -> Way& { return ways[kind][b * (f + 1) + ops]; };
    auto offer = [](Way& to, Way from) {
      if (from.cost < to.cost) to = from;
    };
    constexpr std::array<int, 2> kBefore = {kAfterConv, kAfterMk};  // after a conv, an mk region
    for (int b = 1; b <= n_; ++b) {
      // Op b - 1 as a conv step.
      const int op = b - 1;
      if (op == 0) {
        if (conv_[0][kStart] < kInf) offer(at(0, b, 0), {conv_[0][kStart], 0, kStart, 0});
      } else {
        for (int kind = 0; kind < 2; ++kind) {
          const TimeNs step = conv_[op][kBefore[kind]];
          if (step >= kInf) continue;
          for (int ops = 0; ops <= f; ++ops) {
            const TimeNs c = at(kind, op, ops).cost;
            if (c < kInf) offer(at(0, b, ops), {c + step, op, int8_t(kBefore[kind]), ops});
          }
        }
      }
      // An mk region [a, b).
      for (int a = 0; a < b; ++a) {
        if (b > mk_limit_[a] || makespan_[a][b - a - 1] < 0) continue;
        const TimeNs work = makespan_[a][b - a - 1];
        if (a == 0) {
          if (overhead_[0][kStart] < kInf) {
            offer(at(1, b, std::min(f, b)), {overhead_[0][kStart] + work, 0, kStart, 0});
          }
          continue;
        }
        for (int kind = 0; kind < 2; ++kind) {
          const TimeNs into = overhead_[a][kBefore[kind]];
          if (into >= kInf) continue;
          for (int ops = 0; ops <= f; ++ops) {
            const TimeNs c = at(kind, a, ops).cost;
            if (c >= kInf) continue;
            offer(at(1, b, std::min(f, ops + b - a)),
                  {c + into + work, a, int8_t(kBefore[kind]), ops});
          }
        }
      }
    }
    int kind = at(1, n_, f).cost < at(0, n_, f).cost ? 1 : 0;
    Way w = at(kind, n_, f);
    if (w.cost >= kInf) {
      throw Error("stage " + stage_ + " at batch " + std::to_string(batch_) +
                  ": no composition the profile can time has " + std::to_string(floor) +
                  " ops in mk regions");
    }
    StageCandidate out;
    out.key_ns = w.cost;
    for (int b = n_;;) {
      const Region r{kind == 0 ? RegionKind::conv : RegionKind::mk, w.from, b};
      if (r.kind == RegionKind::conv && !out.regions.empty() &&
          out.regions.back().kind == RegionKind::conv) {
        out.regions.back().begin = r.begin;
      } else {
        out.regions.push_back(r);
      }
      if (w.from_kind == kStart) break;
      b = w.from;
      kind = w.from_kind == kAfterConv ? 0 : 1;
      w = at(kind, b, w.from_ops);
    }
    std::reverse(out.regions.begin(), out.regions.end());
    return out;
  }

  simulator::Simulator& sim_;
  std::string stage_;
  int64_t batch_;
  SearchOptions options_;
  int n_;
  MkRegionEvaluator evaluator_;
  std::vector<std::array<TimeNs, 3>> conv_;      // [op][before]: the op alone as a conv step
  std::vector<std::array<TimeNs, 3>> overhead_;  // [op][before]: an mk region from op, less work
  std::vector<std::vector<TimeNs>> makespan_;    // [a][b - a - 1]: mk[a:b]'s work, -1 unknown
  std::vector<int> mk_limit_;                    // mk regions from a end at most here
  std::vector<double> bytes_ns_, work_ns_;       // prefix sums over ops
  std::vector<double> longest_ns_;               // per op: its longest task, alone
  std::vector<std::vector<TimeNs>> lb_;          // [a][b - a - 1]: mk[a:b]'s work, or a bound
  std::vector<std::array<TimeNs, 3>> prefix_, suffix_;
  std::array<std::vector<std::vector<Entry>>, 2> lists_;  // k_best's, per kind and cut
  std::vector<TimeNs> local_upper_, any_upper_, rest_;    // bound_locally's
  int64_t single_mk_ops_ = 0;                             // ops with a task benchmark
  int64_t single_mk_tasks_ = 0;
};

}  // namespace

StageSearch search_stage(simulator::Simulator& sim, std::string_view stage, int64_t batch,
                         const SearchOptions& options) {
  return StageSearcher(sim, stage, batch, options).run();
}

StageSearch exhaustive_stage(simulator::Simulator& sim, std::string_view stage, int64_t batch,
                             int top_k, bool canonical_only, double hidden_launch_share,
                             int64_t least_mk_ops) {
  const auto start = std::chrono::steady_clock::now();
  const int n = sim.graph(stage, batch).op_count();
  if (n > kExhaustiveMaxOps) {
    throw Error("exhaustive search: stage " + std::string(stage) + " has " + std::to_string(n) +
                " ops; enumeration is limited to " + std::to_string(kExhaustiveMaxOps));
  }
  if (top_k < 1) throw Error("exhaustive search: top K must be at least 1");
  // cost[kind][a][b][before], kInf where the profile cannot time it.
  std::array<std::vector<std::vector<std::array<TimeNs, 3>>>, 2> cost;
  int64_t simulated = 0;
  for (int kind = 0; kind < 2; ++kind) {
    cost[kind].assign(n, std::vector<std::array<TimeNs, 3>>(n + 1, {kInf, kInf, kInf}));
    for (int a = 0; a < n; ++a) {
      for (int b = a + 1; b <= n; ++b) {
        for (int before : {kStart, kAfterConv, kAfterMk}) {
          if ((a == 0) != (before == kStart)) continue;
          try {
            const Region r{kind == 0 ? RegionKind::conv : RegionKind::mk, a, b};
            cost[kind][a][b][before] = region_key_ns(
                *sim.simulate_region(stage, batch, r, kBoundary[before]), hidden_launch_share);
            if (kind == 1) ++simulated;
          } catch (const Error&) {
          }
        }
      }
    }
  }
  // Depth first over (position, kind of the last region), keeping the K best; a partial
  // composition already worse than the K-th best found cannot become better (no region costs
  // less than nothing).
  using Found = std::pair<TimeNs, int64_t>;  // time, order found
  std::priority_queue<Found> worst_first;
  std::vector<StageCandidate> found;
  std::vector<Region> regions;
  auto visit = [&](auto&& self, int pos, int before, TimeNs so_far, int64_t mk_ops) -> void {
    // Ties keep the composition found first.
    if (static_cast<int>(worst_first.size()) == top_k && so_far >= worst_first.top().first) return;
    if (mk_ops + (n - pos) < least_mk_ops) return;
    if (pos == n) {
      worst_first.push({so_far, static_cast<int64_t>(found.size())});
      found.push_back({regions, so_far});
      if (static_cast<int>(worst_first.size()) > top_k) worst_first.pop();
      return;
    }
    for (int b = pos + 1; b <= n; ++b) {
      for (int kind = 0; kind < 2; ++kind) {
        if (canonical_only && kind == 0 && before == kAfterConv) continue;
        const TimeNs c = cost[kind][pos][b][before];
        if (c >= kInf) continue;
        regions.push_back({kind == 0 ? RegionKind::conv : RegionKind::mk, pos, b});
        self(self, b, kind == 0 ? kAfterConv : kAfterMk, so_far + c,
             mk_ops + (kind == 1 ? b - pos : 0));
        regions.pop_back();
      }
    }
  };
  visit(visit, 0, kStart, 0, 0);
  std::vector<int64_t> kept;
  while (!worst_first.empty()) {
    kept.push_back(worst_first.top().second);
    worst_first.pop();
  }
  std::reverse(kept.begin(), kept.end());
  StageSearch out;
  out.stage = std::string(stage);
  out.batch = batch;
  for (int64_t i : kept) out.best.push_back(found[i]);
  out.stats.ops = n;
  out.stats.mk_regions = static_cast<int64_t>(n) * (n + 1) / 2;
  out.stats.mk_simulated = simulated;
  out.stats.seconds = seconds_since(start);
  return out;
}

}  // namespace megacut::planner
