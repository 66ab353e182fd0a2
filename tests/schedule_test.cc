#include "model/schedule.h"

#include <gtest/gtest.h>

#include <random>

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

TEST(ScheduleTest, RejectsBadRanges) {
  const Graph g = tiny("tiny-llama", "decode", 1);
  EXPECT_THROW(make_schedule(g, 3, 3, 4), Error);
  EXPECT_THROW(make_schedule(g, 0, g.op_count() + 1, 4), Error);
  EXPECT_THROW(make_schedule(g, 0, 1, 0), Error);
}

}  // namespace
}  // namespace megacut::model
