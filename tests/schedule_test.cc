#include "model/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <span>
#include <vector>

#include "model/decoder.h"
#include "model/error.h"

namespace megacut::model {
namespace {

Graph tiny(const std::string& name, const std::string& stage, int64_t batch) {
  const ModelSpec spec = load_model(name);
  return build_graph(spec, make_scenario(spec, batch, 24), stage);
}

// Checks the properties the executor's deadlock check relies on: each task of the region is
// placed exactly once, and no task waits on a task placed after it in its own queue.
void expect_valid(const Graph& g, const Schedule& s) {
  const TaskId first = g.first_task(s.op_begin);
  const TaskId last = g.first_task(s.op_end - 1) + g.op(s.op_end - 1).tiling.count();
  std::vector<int> queue_of(last - first, -1);
  std::vector<size_t> position(last - first, 0);
  for (int q = 0; q < s.queue_count(); ++q) {
    for (size_t i = 0; i < s.queues[q].size(); ++i) {
      const TaskId id = s.queues[q][i];
      ASSERT_GE(id, first);
      ASSERT_LT(id, last);
      ASSERT_EQ(queue_of[id - first], -1) << "task placed twice";
      queue_of[id - first] = q;
      position[id - first] = i;
    }
  }
  for (TaskId id = first; id < last; ++id) {
    ASSERT_NE(queue_of[id - first], -1) << "task " << id << " not placed";
    for (TaskId dep : g.task_deps(id)) {
      if (dep < first) continue;
      if (queue_of[dep - first] == queue_of[id - first]) {
        ASSERT_LT(position[dep - first], position[id - first])
            << "task " << id << " waits on a task later in its own queue";
      }
    }
  }
}

TEST(ScheduleTest, RandomRegionsAndQueueCountsAreValid) {
  std::mt19937 rng(11);
  for (const char* model : {"tiny-llama", "tiny-qwen3"}) {
    for (const char* stage : {"prefill", "decode"}) {
      const Graph g = tiny(model, stage, 1 + rng() % 5);
      for (int trial = 0; trial < 40; ++trial) {
        const int begin = static_cast<int>(rng() % g.op_count());
        const int end = begin + 1 + static_cast<int>(rng() % (g.op_count() - begin));
        const int queues = 1 + static_cast<int>(rng() % 140);
        expect_valid(g, make_schedule(g, begin, end, queues));
      }
    }
  }
}

TEST(ScheduleTest, Deterministic) {
  const Graph g = tiny("tiny-qwen3", "prefill", 3);
  EXPECT_EQ(make_schedule(g, 0, g.op_count(), 17).queues,
            make_schedule(g, 0, g.op_count(), 17).queues);
}

TEST(ScheduleTest, IndependentTasksSpreadOverQueues) {
  // The first op (embedding) has no dependencies inside the region: with at least as many
  // queues as tiles, each tile lands on its own queue.
  const Graph g = tiny("tiny-llama", "prefill", 4);
  const int64_t tiles = g.op(0).tiling.count();
  const Schedule s = make_schedule(g, 0, 1, static_cast<int>(tiles) + 3);
  int used = 0;
  for (const auto& q : s.queues) {
    EXPECT_LE(q.size(), 1u);
    used += q.empty() ? 0 : 1;
  }
  EXPECT_EQ(used, tiles);
}

// A task's dependency entries hold each of its dependencies once: an op of two or more tasks it
// needs all of as one entry, where the op's first dependency lies, every other dependency by id,
// in the tile graph's order.
TEST(ScheduleTest, DependencyEntriesFoldWholeOpsInTheGraphsOrder) {
  int64_t whole = 0, single = 0;
  for (const char* model : {"tiny-llama", "tiny-qwen3"}) {
    for (const char* stage : {"prefill", "decode"}) {
      const Graph g = tiny(model, stage, 3);
      for (TaskId id = 0; id < g.task_count(); ++id) {
        std::map<int, int64_t> per_op;
        std::vector<TaskId> edges;
        for (auto [it, end] = boost::in_edges(static_cast<uint32_t>(id), g.tiles()); it != end;
             ++it) {
          edges.push_back(boost::source(*it, g.tiles()));
          ++per_op[g.task(edges.back()).op];
        }
        std::vector<int64_t> expected;
        std::set<int> listed;
        for (TaskId dep : edges) {
          const int op = g.task(dep).op;
          if (g.op(op).tiling.count() >= 2 && per_op[op] == g.op(op).tiling.count()) {
            if (listed.insert(op).second) expected.push_back(-(op + 1));
          } else {
            expected.push_back(dep);
          }
        }
        const std::span<const int64_t> got = g.dep_entries(id);
        ASSERT_EQ(std::vector<int64_t>(got.begin(), got.end()), expected) << "task " << id;
        whole += static_cast<int64_t>(listed.size());
        single += static_cast<int64_t>(expected.size() - listed.size());
        const int op = g.task_op(id);
        ASSERT_TRUE(g.first_task(op) <= id && id < g.first_task(op + 1)) << "task " << id;
      }
    }
  }
  EXPECT_GT(whole, 0);
  EXPECT_GT(single, 0);
}

// A task waits for exactly its dependencies inside the region that no earlier task of its queue
// ran or waited for, and for an op of two or more tasks all of which it depends on, once for the
// whole op (unless its queue saw them all); never for an op it waits for by data, which counts as
// no wait: checked against sets per queue, on random regions, queue counts and data edges.
TEST(ScheduleTest, TasksWaitOnlyForWhatTheirQueueHasNotSeenDone) {
  std::mt19937 rng(5);
  int64_t waits = 0, op_waits = 0, dropped = 0, data_edges = 0;
  for (const char* model : {"tiny-llama", "tiny-qwen3"}) {
    for (const char* stage : {"prefill", "decode"}) {
      const Graph g = tiny(model, stage, 1 + rng() % 5);
      for (int trial = 0; trial < 20; ++trial) {
        const int begin = static_cast<int>(rng() % g.op_count());
        const int end = begin + 1 + static_cast<int>(rng() % (g.op_count() - begin));
        const Schedule s = make_schedule(g, begin, end, 1 + static_cast<int>(rng() % 140));
        // Every other trial, about half of the region's producer-consumer op pairs are waited
        // for by data: no wait for them, and none counted as seen.
        std::vector<DataEdge> by_data;
        if (trial % 2 == 1) {
          for (int op = begin; op < end; ++op) {
            for (int tensor : g.op(op).inputs) {
              const int producer = g.producer(tensor);
              const DataEdge e{producer, op};
              if (producer >= begin && rng() % 2 == 0 &&
                  std::ranges::find(by_data, e) == by_data.end()) {
                by_data.push_back(e);
              }
            }
          }
          data_edges += static_cast<int64_t>(by_data.size());
        }
        const TaskWaits w = task_waits(g, s, by_data);
        const TaskId first = g.first_task(begin);
        ASSERT_EQ(w.offsets.size(), static_cast<size_t>(s.task_count() + 1));
        ASSERT_EQ(w.op_offsets.size(), static_cast<size_t>(s.task_count() + 1));
        for (const std::vector<TaskId>& queue : s.queues) {
          std::set<TaskId> seen;
          std::set<int> seen_whole;
          for (TaskId id : queue) {
            std::map<int, std::set<TaskId>> by_op;
            for (TaskId dep : g.task_deps(id)) {
              const DataEdge e{g.task(dep).op, g.task(id).op};
              if (dep >= first && std::ranges::find(by_data, e) == by_data.end()) {
                by_op[g.task(dep).op].insert(dep);
              }
            }
            std::set<TaskId> expected;
            std::set<int> expected_ops;
            for (const auto& [op, deps] : by_op) {
              const int64_t tiles = g.op(op).tiling.count();
              if (tiles >= 2 && static_cast<int64_t>(deps.size()) == tiles) {
                const bool all_seen =
                    std::ranges::all_of(deps, [&](TaskId dep) { return seen.contains(dep); });
                if (!seen_whole.contains(op) && !all_seen) expected_ops.insert(op);
                seen_whole.insert(op);
                seen.insert(deps.begin(), deps.end());
                continue;
              }
              for (TaskId dep : deps) {
                if (seen.contains(dep)) {
                  ++dropped;
                } else {
                  expected.insert(dep);
                }
              }
            }
            const int64_t i = id - first;
            const std::set<TaskId> got(w.deps.begin() + w.offsets[i],
                                       w.deps.begin() + w.offsets[i + 1]);
            const std::set<int> got_ops(w.ops.begin() + w.op_offsets[i],
                                        w.ops.begin() + w.op_offsets[i + 1]);
            ASSERT_EQ(got, expected) << "task " << id;
            ASSERT_EQ(got_ops, expected_ops) << "task " << id;
            ASSERT_EQ(w.count(i), static_cast<int64_t>(expected.size() + expected_ops.size()));
            waits += static_cast<int64_t>(expected.size());
            op_waits += static_cast<int64_t>(expected_ops.size());
            seen.insert(expected.begin(), expected.end());
            seen.insert(id);
          }
        }
        const std::vector<int32_t> counts = task_wait_counts(g, s, by_data);
        ASSERT_EQ(counts.size(), static_cast<size_t>(s.task_count()));
        for (int64_t i = 0; i < s.task_count(); ++i) ASSERT_EQ(counts[i], w.count(i));
      }
    }
  }
  EXPECT_GT(waits, 0);
  EXPECT_GT(op_waits, 0);
  EXPECT_GT(dropped, 0);
  EXPECT_GT(data_edges, 0);
}

// A region's hops by data: each op whose first input an earlier op of the region wrote, where the
// consumer takes words and the producer gives them, unless the consumer reads more of the
// producer's output. The tiny llama's decode step, op by op: every edge found is such an op, and
// every such op is found; none reaches before the region, and none where a side cannot.
TEST(ScheduleTest, DataEdgesFollowFirstInputsBetweenBodiesThatCan) {
  const Graph g = tiny("tiny-llama", "decode", 1);
  auto all = [](int) { return true; };
  auto expected = [&](int begin, int end, const std::function<bool(int)>& takes,
                      const std::function<bool(int)>& gives) {
    std::vector<DataEdge> edges;
    for (int op = begin; op < end; ++op) {
      const Op& o = g.op(op);
      if (o.inputs.empty() || !takes(op)) continue;
      const int producer = g.producer(o.inputs[0]);
      if (producer < begin || !gives(producer)) continue;
      if (std::ranges::count_if(o.inputs, [&](int t) { return g.producer(t) == producer; }) > 1) {
        continue;
      }
      edges.push_back({producer, op});
    }
    return edges;
  };
  const std::vector<DataEdge> whole = data_edges(g, 0, g.op_count(), all, all);
  EXPECT_EQ(whole, expected(0, g.op_count(), all, all));
  // Each op after embed reads the one before it as its x (a residual, where it has one, comes
  // from further back): a chain.
  ASSERT_EQ(whole.size(), static_cast<size_t>(g.op_count() - 1));
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_EQ(whole[i], (DataEdge{static_cast<int>(i), static_cast<int>(i) + 1}));
  }
  // A region that starts at a consumer leaves its hop out.
  const int cut = whole.back().consumer;
  for (const DataEdge& e : data_edges(g, cut, g.op_count(), all, all)) {
    EXPECT_GE(e.producer, cut);
  }
  // Ops that cannot take or give: none of their hops.
  auto even = [](int op) { return op % 2 == 0; };
  const std::vector<DataEdge> some = data_edges(g, 0, g.op_count(), even, all);
  EXPECT_EQ(some, expected(0, g.op_count(), even, all));
  for (const DataEdge& e : some) EXPECT_EQ(e.consumer % 2, 0);
  EXPECT_TRUE(data_edges(g, 0, g.op_count(), all, [](int) { return false; }).empty());
}

// On one queue every dependency inside the region ran earlier on that queue: nothing to wait for.
// On many, the decode step's tiles that share one input tile wait for it once per queue, and the
// linears after a norm over the whole row (norm-linear) wait for the op before once, as a whole.
TEST(ScheduleTest, OneQueueWaitsForNothingAndSharedInputsAreWaitedForOncePerQueue) {
  const Graph g = tiny("tiny-llama", "decode", 1);
  const TaskWaits alone = task_waits(g, make_schedule(g, 0, g.op_count(), 1));
  EXPECT_TRUE(alone.deps.empty());
  EXPECT_TRUE(alone.ops.empty());
  const Schedule s = make_schedule(g, 0, g.op_count(), 3);
  const TaskWaits w = task_waits(g, s);
  for (const std::vector<TaskId>& queue : s.queues) {
    std::set<TaskId> waited;
    std::set<int> waited_ops;
    for (TaskId id : queue) {
      for (int64_t i = w.offsets[id]; i < w.offsets[id + 1]; ++i) {
        EXPECT_TRUE(waited.insert(w.deps[i]).second) << "task " << id << " waits again";
      }
      for (int64_t i = w.op_offsets[id]; i < w.op_offsets[id + 1]; ++i) {
        EXPECT_TRUE(waited_ops.insert(w.ops[i]).second) << "task " << id << " waits again";
      }
    }
  }
  int norm_linears = 0;
  for (int op = 0; op < g.op_count(); ++op) {
    if (g.op(op).kind->name() != "norm-linear" || g.op(op).tiling.count() < 3) continue;
    ++norm_linears;
    const int64_t before = g.op(op - 1).tiling.count();
    for (TaskId id = g.first_task(op); id < g.first_task(op) + g.op(op).tiling.count(); ++id) {
      const int64_t ops = w.op_offsets[id + 1] - w.op_offsets[id];
      EXPECT_LE(ops, 1) << "task " << id;
      if (before >= 2) EXPECT_EQ(w.offsets[id + 1] - w.offsets[id], 0) << "task " << id;
    }
  }
  EXPECT_GT(norm_linears, 0);
}

TEST(ScheduleTest, RejectsBadRanges) {
  const Graph g = tiny("tiny-llama", "decode", 1);
  EXPECT_THROW(make_schedule(g, 3, 3, 4), Error);
  EXPECT_THROW(make_schedule(g, 0, g.op_count() + 1, 4), Error);
  EXPECT_THROW(make_schedule(g, 0, 1, 0), Error);
}

}  // namespace
}  // namespace megacut::model
