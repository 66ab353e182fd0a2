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
enum Before : int { kStart = 0, kAfterConv = 1, kAfterMk = 2, kAfterTile = 3 };
constexpr std::array<Boundary, 4> kBoundary = {Boundary::stage_start, Boundary::after_conv,
                                               Boundary::after_mk, Boundary::after_tile};
constexpr std::array<int, 4> kBefores = {kStart, kAfterConv, kAfterMk, kAfterTile};
using Costs = std::array<TimeNs, 4>;  // by Before
// The DP's states at a cut: the kind of region that ends there (the start at cut 0).
enum State : int { kAtStart = -1, kConvEnds = 0, kMkEnds = 1, kTileEnds = 2 };
constexpr std::array<int, 3> kEndStates = {kConvEnds, kMkEnds, kTileEnds};
constexpr Before before_of(int state) {
  return state == kAtStart    ? kStart
         : state == kMkEnds   ? kAfterMk
         : state == kTileEnds ? kAfterTile
                              : kAfterConv;
}
constexpr RegionKind kind_of(int state) {
  return state == kConvEnds ? RegionKind::conv
         : state == kMkEnds ? RegionKind::mk
                            : RegionKind::tile;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One way to reach a DP state: the cost so far and the state it came from (position, kind of
// the region ending there, rank in that state's list).
struct Entry {
  TimeNs cost = kInf;
  int from = 0;
  int8_t from_kind = kAtStart;  // the State at `from`
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
    conv_.assign(n_, {kInf, kInf, kInf, kInf});
    overhead_.assign(n_, {kInf, kInf, kInf, kInf});
    tile_first_.assign(n_, {kInf, kInf, kInf, kInf});
    makespan_.resize(n_);
    std::vector<char> mk_ok(n_, 0);
    for (int i = 0; i < n_; ++i) {
      makespan_[i].assign(n_ - i, -1);
      for (int before : kBefores) {
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
        if (!options_.tile) continue;
        try {
          tile_first_[i][before] =
              region_key_ns(*sim_.simulate_region(stage_, batch_, {RegionKind::tile, i, i + 1},
                                                  kBoundary[before]),
                            options_.hidden_launch_share);
        } catch (const Error&) {
        }
      }
    }
    // A tile region's ops after its first, each one step after the one before (the simulator
    // adds one per op, whatever ran before the region): tile[i-1:i+1] less tile[i-1:i], after
    // the first boundary the profile can time.
    std::vector<TimeNs> step(n_, kInf);
    for (int i = 1; i < n_ && options_.tile; ++i) {
      for (int before : kBefores) {
        if ((i == 1) != (before == kStart)) continue;
        try {
          const auto key = [&](int end) {
            return region_key_ns(
                *sim_.simulate_region(stage_, batch_, {RegionKind::tile, i - 1, end},
                                      kBoundary[before]),
                options_.hidden_launch_share);
          };
          step[i] = key(i + 1) - key(i);
          break;
        } catch (const Error&) {
        }
      }
    }
    tile_steps_.assign(n_ + 1, 0);
    tile_gaps_.assign(n_ + 1, 0);
    for (int i = 0; i < n_; ++i) {
      tile_steps_[i + 1] = tile_steps_[i] + (step[i] < kInf ? step[i] : 0);
      tile_gaps_[i + 1] = tile_gaps_[i] + (step[i] >= kInf ? 1 : 0);
    }
    mk_limit_.assign(n_, 0);
    for (int a = n_ - 1; a >= 0; --a) {
      mk_limit_[a] = !mk_ok[a] ? a : (a + 1 < n_ ? std::max(a + 1, mk_limit_[a + 1]) : n_);
    }
    // Per op: what its standalone tasks cost, for the lower bounds.
    const double bandwidth = sim_.profile().device.copy_bandwidth_gb_per_s;
    const double link_bandwidth = sim_.megakernel_params().link_bytes_per_ns;
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
          // A communication task's link bytes move beside its device bytes
          // (simulator/megakernel.h).
          const double send = c.link_bytes.empty() ? 0.0 : c.link_bytes[t] / link_bandwidth;
          bytes += move;
          work += static_cast<double>(c.fixed_ns[t]) + std::max(move, send);
          longest_ns_[i] =
              std::max(longest_ns_[i], static_cast<double>(c.fixed_ns[t]) + std::max(move, send));
        }
        ++single_mk_ops_;
        single_mk_tasks_ += g.op(i).tiling.count();
      }
      bytes_ns_[i + 1] = bytes_ns_[i] + bytes;
      work_ns_[i + 1] = work_ns_[i] + work;
    }
  }

  // The steps of ops [a + 1, b) in a tile region that starts at a; kInf where one has none.
  TimeNs tile_steps(int a, int b) const {
    if (b - a < 2) return kInf;  // a tile region of one op is a conv region of our kernel
    return tile_gaps_[b] - tile_gaps_[a + 1] > 0 ? kInf : tile_steps_[b] - tile_steps_[a + 1];
  }
  // tile[a:b] after `before`.
  TimeNs tile_cost(int a, int b, int before) const {
    return add(tile_first_[a][before], tile_steps(a, b));
  }

  // A lower bound on the makespan of mk[a:b]: all bytes pass the shared bandwidth; every SM
  // is busy at most the whole time, and a task occupies its SM for its fixed time plus at
  // least its bytes at the full bandwidth; and no task is shorter than that. Rounded down,
  // with a margin for the engine's floating-point bandwidth clock.
  static TimeNs lower_bound(double bytes_ns, double work_per_sm_ns, double longest_ns) {
    const double bound = std::max({bytes_ns, work_per_sm_ns, longest_ns});
    return std::max<TimeNs>(0, static_cast<TimeNs>(std::floor(bound * (1 - 1e-9))) - 2);
  }

  // The cheapest way into a region starting at a that costs cost[before] more, given prefix
  // bounds.
  TimeNs prefix_bound_into(int a, const Costs& cost) const {
    if (a == 0) return cost[kStart];
    TimeNs best = kInf;
    for (int state : kEndStates)
      best = std::min(best, add(prefix_[a][state], cost[before_of(state)]));
    return best;
  }
  // The cheapest way into an mk region starting at a, given prefix bounds.
  TimeNs best_prefix_bound(int a) const { return prefix_bound_into(a, overhead_[a]); }

  static TimeNs add(TimeNs x, TimeNs y) { return x >= kInf || y >= kInf ? kInf : x + y; }

  // Lower bounds on the best prefix into, and the best suffix out of, every state, with exact
  // mk costs where simulated and lower bounds elsewhere. prefix_[b][state]: a path from the
  // stage start to cut b whose last region is of the state's kind; suffix_[b][before]: from
  // cut b after a region that leaves that boundary to the stage end (kStart at b = 0).
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
    prefix_.assign(n_ + 1, {kInf, kInf, kInf, kInf});
    for (int b = 1; b <= n_; ++b) {
      prefix_[b][kConvEnds] = prefix_bound_into(b - 1, conv_[b - 1]);
      TimeNs best = kInf, tile = kInf;
      for (int a = 0; a < b; ++a) {
        if (b <= mk_limit_[a]) best = std::min(best, add(best_prefix_bound(a), lb_[a][b - a - 1]));
        tile = std::min(tile, add(prefix_bound_into(a, tile_first_[a]), tile_steps(a, b)));
      }
      prefix_[b][kMkEnds] = best;
      prefix_[b][kTileEnds] = tile;
    }
    suffix_.assign(n_ + 1, {kInf, kInf, kInf, kInf});
    suffix_[n_] = {0, 0, 0, 0};
    for (int b = n_ - 1; b >= 0; --b) {
      for (int k : kBefores) {
        if ((b == 0) != (k == kStart)) continue;
        TimeNs best = add(conv_[b][k], suffix_[b + 1][kAfterConv]);
        for (int c = b + 1; c <= mk_limit_[b]; ++c) {
          best = std::min(best, add(add(overhead_[b][k], lb_[b][c - b - 1]), suffix_[c][kAfterMk]));
        }
        for (int c = b + 2; c <= n_; ++c) {
          best = std::min(best, add(tile_cost(b, c, k), suffix_[c][kAfterTile]));
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
  //  - when a run from a reaches b at time `now`, no task of ops [b, e) has started or moved a
  //    byte (simulator/megakernel.h: not even one it loads ahead), so a prefix through region [a,
  //    e), e > b, costs at least the best prefix into a plus now plus the bound on [b, e)'s tasks;
  //    it is of no use when that exceeds the K-th best prefix into b extended by conv to e, plus
  //    delta. rest_[b] is the least, over e, of the bound less the extension and delta: when the
  //    best prefix into a plus now plus rest_[b] exceeds any_upper_[b], the run can stop.
  void bound_locally() {
    const int k = options_.top_k;
    auto kth = [&](const std::vector<Entry>& list) {
      return static_cast<int>(list.size()) == k ? list[k - 1].cost : kInf;
    };
    // What a continuation from cut b may cost more after a conv or tile region than after an mk
    // one.
    std::vector<TimeNs> delta(n_ + 1, 0);
    for (int b = 1; b < n_; ++b) {
      for (const auto& cost : {conv_[b], overhead_[b], tile_first_[b]}) {
        if (cost[kAfterMk] >= kInf) continue;  // no continuation starts that way
        for (int after : {kAfterConv, kAfterTile}) {
          delta[b] = cost[after] >= kInf ? kInf : std::max(delta[b], cost[after] - cost[kAfterMk]);
        }
      }
    }
    local_upper_.assign(n_ + 1, kInf);
    any_upper_.assign(n_ + 1, kInf);
    for (int b = 1; b <= n_; ++b) {
      std::vector<Entry> after_conv = lists_[kConvEnds][b];
      after_conv.insert(after_conv.end(), lists_[kTileEnds][b].begin(), lists_[kTileEnds][b].end());
      keep_best(after_conv, k);
      local_upper_[b] = std::min(kth(lists_[kMkEnds][b]), add(kth(after_conv), delta[b]));
      std::vector<Entry> all = after_conv;
      all.insert(all.end(), lists_[kMkEnds][b].begin(), lists_[kMkEnds][b].end());
      keep_best(all, k);
      any_upper_[b] = kth(all);
    }
    const double sms = sim_.profile().device.sm_count;
    rest_.assign(n_ + 1, -kInf);
    for (int b = 1; b < n_; ++b) {
      TimeNs extension = std::max({conv_[b][kAfterConv], conv_[b][kAfterMk], conv_[b][kAfterTile]});
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
    // The best prefix into cut a ending in each kind of region; exact for every cut up to a.
    std::vector<TimeNs> best_conv(n_ + 1, kInf), best_mk(n_ + 1, kInf), best_tile(n_ + 1, kInf);
    auto best_into = [&](int a, const Costs& cost) {
      if (a == 0) return cost[kStart];
      return std::min({add(best_conv[a], cost[kAfterConv]), add(best_mk[a], cost[kAfterMk]),
                       add(best_tile[a], cost[kAfterTile])});
    };
    for (int a = 0; a < n_; ++a) {
      if (a >= 1) best_conv[a] = best_into(a - 1, conv_[a - 1]);
      for (int from = 0; from + 2 <= a; ++from) {
        best_tile[a] =
            std::min(best_tile[a], add(best_into(from, tile_first_[from]), tile_steps(from, a)));
      }
      const TimeNs into = best_into(a, overhead_[a]);
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
    // lists[state][b]: the k best ways to reach cut b with a region of the state's kind last.
    auto& lists = lists_;
    for (auto& list : lists) list.assign(n_ + 1, {});
    std::vector<Entry> candidates;
    // Every way into a region from cut a that costs cost[before] + extra.
    auto extend = [&](int a, const Costs& cost, TimeNs extra, std::vector<Entry>& out) {
      if (extra >= kInf) return;
      if (a == 0) {
        if (cost[kStart] < kInf) out.push_back({cost[kStart] + extra, 0, kAtStart, 0});
        return;
      }
      for (int state : kEndStates) {
        const TimeNs c = cost[before_of(state)];
        if (c >= kInf) continue;
        const std::vector<Entry>& from = lists[state][a];
        for (int r = 0; r < static_cast<int>(from.size()); ++r) {
          out.push_back({from[r].cost + c + extra, a, static_cast<int8_t>(state), r});
        }
      }
    };
    for (int b = 1; b <= n_; ++b) {
      candidates.clear();
      extend(b - 1, conv_[b - 1], 0, candidates);
      keep_best(candidates, k);
      lists[kConvEnds][b] = candidates;
      candidates.clear();
      for (int a = 0; a < b; ++a) {
        if (b > mk_limit_[a]) continue;
        const TimeNs m = makespan_[a][b - a - 1];
        if (m >= 0) extend(a, overhead_[a], m, candidates);
      }
      keep_best(candidates, k);
      lists[kMkEnds][b] = candidates;
      candidates.clear();
      for (int a = 0; a + 2 <= b; ++a) extend(a, tile_first_[a], tile_steps(a, b), candidates);
      keep_best(candidates, k);
      lists[kTileEnds][b] = candidates;
    }
    std::vector<std::pair<Entry, int>> ends;  // entry, state
    for (int state : kEndStates) {
      for (int r = 0; r < static_cast<int>(lists[state][n_].size()); ++r) {
        ends.push_back({lists[state][n_][r], state});
      }
    }
    std::sort(ends.begin(), ends.end(), [](const auto& x, const auto& y) {
      return std::tie(x.first, x.second) < std::tie(y.first, y.second);
    });
    std::vector<StageCandidate> out;
    for (int i = 0; i < std::min<int>(k, static_cast<int>(ends.size())); ++i) {
      StageCandidate c;
      c.key_ns = ends[i].first.cost;
      // Walk back: each step is one region (mk, tile) or one op of a conv region.
      int b = n_, state = ends[i].second;
      Entry e = ends[i].first;
      std::vector<Region> steps;
      for (;;) {
        steps.push_back({kind_of(state), e.from, b});
        if (e.from_kind == kAtStart) break;
        b = e.from;
        state = e.from_kind;
        e = lists[state][b][e.from_rank];
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
      int from = 0;                 // the cut it came from
      int8_t from_kind = kAtStart;  // the State it came from
      int from_ops = 0;
    };
    // ways[state][b * (f + 1) + ops].
    std::array<std::vector<Way>, 3> ways;
    for (auto& w : ways) w.assign(static_cast<size_t>(n_ + 1) * (f + 1), {});
    auto at = [&](int state, int b, int ops) -> Way& { return ways[state][b * (f + 1) + ops]; };
    auto offer = [](Way& to, Way from) {
      if (from.cost < to.cost) to = from;
    };
    // A region [a, b) of `mk_ops` ops in mk regions that costs cost[before] + extra, into `to`.
    auto enter = [&](int a, int b, int to, const Costs& cost, TimeNs extra, int mk_ops) {
      if (extra >= kInf) return;
      if (a == 0) {
        if (cost[kStart] < kInf) {
          offer(at(to, b, std::min(f, mk_ops)), {cost[kStart] + extra, 0, kAtStart, 0});
        }
        return;
      }
      for (int state : kEndStates) {
        const TimeNs into = cost[before_of(state)];
        if (into >= kInf) continue;
        for (int ops = 0; ops <= f; ++ops) {
          const TimeNs c = at(state, a, ops).cost;
          if (c >= kInf) continue;
          offer(at(to, b, std::min(f, ops + mk_ops)),
                {c + into + extra, a, static_cast<int8_t>(state), ops});
        }
      }
    };
    for (int b = 1; b <= n_; ++b) {
      enter(b - 1, b, kConvEnds, conv_[b - 1], 0, 0);  // op b - 1 as a conv step
      for (int a = 0; a < b; ++a) {
        if (b <= mk_limit_[a] && makespan_[a][b - a - 1] >= 0) {
          enter(a, b, kMkEnds, overhead_[a], makespan_[a][b - a - 1], b - a);
        }
        enter(a, b, kTileEnds, tile_first_[a], tile_steps(a, b), 0);
      }
    }
    int state = kConvEnds;
    for (int s : kEndStates) {
      if (at(s, n_, f).cost < at(state, n_, f).cost) state = s;
    }
    Way w = at(state, n_, f);
    if (w.cost >= kInf) {
      throw Error("stage " + stage_ + " at batch " + std::to_string(batch_) +
                  ": no composition the profile can time has " + std::to_string(floor) +
                  " ops in mk regions");
    }
    StageCandidate out;
    out.key_ns = w.cost;
    for (int b = n_;;) {
      const Region r{kind_of(state), w.from, b};
      if (r.kind == RegionKind::conv && !out.regions.empty() &&
          out.regions.back().kind == RegionKind::conv) {
        out.regions.back().begin = r.begin;
      } else {
        out.regions.push_back(r);
      }
      if (w.from_kind == kAtStart) break;
      b = w.from;
      state = w.from_kind;
      w = at(state, b, w.from_ops);
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
  std::vector<Costs> conv_;        // [op][before]: the op alone as a conv step
  std::vector<Costs> overhead_;    // [op][before]: an mk region from op, less work
  std::vector<Costs> tile_first_;  // [op][before]: a tile region's first op
  // Prefix sums over ops of a tile region's step after the op before (tile_steps), and of the
  // ops that have none.
  std::vector<TimeNs> tile_steps_;
  std::vector<int> tile_gaps_;
  std::vector<std::vector<TimeNs>> makespan_;  // [a][b - a - 1]: mk[a:b]'s work, -1 unknown
  std::vector<int> mk_limit_;                  // mk regions from a end at most here
  std::vector<double> bytes_ns_, work_ns_;     // prefix sums over ops
  std::vector<double> longest_ns_;             // per op: its longest task, alone
  std::vector<std::vector<TimeNs>> lb_;        // [a][b - a - 1]: mk[a:b]'s work, or a bound
  std::vector<Costs> prefix_;                  // [b][state]: bound_all's
  std::vector<Costs> suffix_;                  // [b][before]: bound_all's
  std::array<std::vector<std::vector<Entry>>, 3> lists_;  // k_best's, per state and cut
  std::vector<TimeNs> local_upper_, any_upper_, rest_;    // bound_locally's
  int64_t single_mk_ops_ = 0;                             // ops an mk region can run
  int64_t single_mk_tasks_ = 0;
};

}  // namespace

StageSearch search_stage(simulator::Simulator& sim, std::string_view stage, int64_t batch,
                         const SearchOptions& options) {
  return StageSearcher(sim, stage, batch, options).run();
}

StageSearch exhaustive_stage(simulator::Simulator& sim, std::string_view stage, int64_t batch,
                             int top_k, bool canonical_only, double hidden_launch_share,
                             int64_t least_mk_ops, bool tile) {
  const auto start = std::chrono::steady_clock::now();
  const int n = sim.graph(stage, batch).op_count();
  if (n > kExhaustiveMaxOps) {
    throw Error("exhaustive search: stage " + std::string(stage) + " has " + std::to_string(n) +
                " ops; enumeration is limited to " + std::to_string(kExhaustiveMaxOps));
  }
  if (top_k < 1) throw Error("exhaustive search: top K must be at least 1");
  // cost[state][a][b][before], kInf where the profile cannot time it; tile regions of two ops
  // or more, as the search makes them.
  std::array<std::vector<std::vector<Costs>>, 3> cost;
  int64_t simulated = 0;
  for (int kind : kEndStates) {
    cost[kind].assign(n, std::vector<Costs>(n + 1, {kInf, kInf, kInf, kInf}));
    for (int a = 0; a < n; ++a) {
      for (int b = a + 1; b <= n; ++b) {
        if (kind == kTileEnds && (b - a < 2 || !tile)) continue;
        for (int before : kBefores) {
          if ((a == 0) != (before == kStart)) continue;
          try {
            const Region r{kind_of(kind), a, b};
            cost[kind][a][b][before] = region_key_ns(
                *sim.simulate_region(stage, batch, r, kBoundary[before]), hidden_launch_share);
            if (kind == kMkEnds) ++simulated;
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
  auto visit = [&](auto&& self, int pos, int last, TimeNs so_far, int64_t mk_ops) -> void {
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
      for (int kind : kEndStates) {
        if (canonical_only && kind == kConvEnds && last == kConvEnds) continue;
        const TimeNs c = cost[kind][pos][b][before_of(last)];
        if (c >= kInf) continue;
        regions.push_back({kind_of(kind), pos, b});
        self(self, b, kind, so_far + c, mk_ops + (kind == kMkEnds ? b - pos : 0));
        regions.pop_back();
      }
    }
  };
  visit(visit, 0, kAtStart, 0, 0);
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
