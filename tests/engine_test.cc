// The engine and the shared-bandwidth resource, on cases small enough to work out by hand.
#include "simulator/engine.h"

#include <gtest/gtest.h>

#include <limits>
#include <utility>
#include <vector>

#include "tests/support/error_of.h"

namespace megacut::simulator {
namespace {

// Records (time, payload) of every event it receives.
struct Recorder : EventHandler {
  std::vector<std::pair<TimeNs, int64_t>> seen;
  void on_event(TimeNs now, int64_t payload) override { seen.emplace_back(now, payload); }
};

TEST(EngineTest, EventsRunByTimeThenInsertionOrder) {
  Engine engine;
  Recorder r;
  engine.schedule(20, &r, 1);
  engine.schedule(10, &r, 2);
  engine.schedule(20, &r, 3);
  engine.schedule(10, &r, 4);
  engine.run();
  // Time first; equal times in the order they were queued.
  const std::vector<std::pair<TimeNs, int64_t>> expected{{10, 2}, {10, 4}, {20, 1}, {20, 3}};
  EXPECT_EQ(r.seen, expected);
  EXPECT_EQ(engine.now(), 20);
  EXPECT_EQ(engine.events_processed(), 4);
}

// Starts a transfer when an event arrives: payload = bytes.
struct Starter : EventHandler {
  Starter(SharedBandwidth* b, Recorder* d) : bandwidth(b), done(d) {}
  SharedBandwidth* bandwidth;
  Recorder* done;
  void on_event(TimeNs now, int64_t payload) override {
    bandwidth->start(now, static_cast<double>(payload), done, payload);
  }
};

std::vector<std::pair<TimeNs, int64_t>> transfers(double bytes_per_ns,
                                                  std::vector<std::pair<TimeNs, int64_t>> starts) {
  Engine engine;
  SharedBandwidth bandwidth(bytes_per_ns);
  Recorder done;
  Starter starter(&bandwidth, &done);
  engine.add_resource(&bandwidth);
  for (auto [at, bytes] : starts) engine.schedule(at, &starter, bytes);
  engine.run();
  return done.seen;
}

constexpr int64_t kMB = 1000 * 1000;
constexpr double kFourTBps = 4000;  // bytes per ns

TEST(SharedBandwidthTest, TwoEqualTransfersShareTheBandwidth) {
  // Two tasks share 4 TB/s, each moves 8 MB: 16 MB at 4 TB/s, both end at 4 µs.
  const auto seen = transfers(kFourTBps, {{0, 8 * kMB}, {0, 8 * kMB}});
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].first, 4000);
  EXPECT_EQ(seen[1].first, 4000);
}

TEST(SharedBandwidthTest, OneTransferAloneGetsAllOfIt) {
  // 8 MB alone at 4 TB/s: 2 µs.
  const auto seen = transfers(kFourTBps, {{0, 8 * kMB}});
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].first, 2000);
}

TEST(SharedBandwidthTest, ShortTransferLeavesFirstThenTheOtherSpeedsUp) {
  // 8 MB and 2 MB start together at 4 TB/s: each gets 2 TB/s until the 2 MB one ends at 1 µs;
  // the 8 MB one has 6 MB left, alone at 4 TB/s: 1.5 µs more, it ends at 2.5 µs.
  const auto seen = transfers(kFourTBps, {{0, 8 * kMB}, {0, 2 * kMB}});
  const std::vector<std::pair<TimeNs, int64_t>> expected{{1000, 2 * kMB}, {2500, 8 * kMB}};
  EXPECT_EQ(seen, expected);
}

TEST(SharedBandwidthTest, LateJoinerSharesFromWhenItJoins) {
  // 8 MB starts at 0 alone (4 MB moved by 1 µs); 4 MB joins at 1 µs and both get 2 TB/s:
  // each has 4 MB to go, both end at 3 µs.
  const auto seen = transfers(kFourTBps, {{0, 8 * kMB}, {1000, 4 * kMB}});
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].first, 3000);
  EXPECT_EQ(seen[1].first, 3000);
}

TEST(SharedBandwidthTest, CompletionTimesRoundUpToWholeNanoseconds) {
  // 1001 bytes at 1000 bytes/ns take 1.001 ns: done at 2 ns, never early.
  const auto seen = transfers(1000, {{0, 1001}});
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].first, 2);
}

TEST(SharedBandwidthTest, ManyTransfersFinishInOrderOfSize) {
  // n transfers of sizes 1..n MB at 1 TB/s: the k-th smallest ends when k MB have gone to each
  // of the n - k + 1 transfers still running plus what the finished ones took; the total ends
  // at sum(sizes) / bandwidth = n(n+1)/2 µs.
  std::vector<std::pair<TimeNs, int64_t>> starts;
  const int n = 16;
  for (int k = n; k >= 1; --k) starts.emplace_back(0, k * kMB);
  const auto seen = transfers(1000, starts);
  ASSERT_EQ(seen.size(), static_cast<size_t>(n));
  for (int k = 1; k < n; ++k) EXPECT_LT(seen[k - 1].second, seen[k].second);
  EXPECT_EQ(seen.back().first, n * (n + 1) / 2 * 1000);
}

// Times are bounded at 2^53 ns both ways: a sum or a conversion past it throws, never wraps
// into a negative or plausible-looking time (and never converts NaN or infinity).
TEST(EngineTest, TimesPast2To53NsThrowInsteadOfWrapping) {
  using testing::error_of;
  constexpr TimeNs kMax = kMaxTimeNs;
  EXPECT_EQ(add_time(kMax - 1, 1), kMax);
  EXPECT_EQ(add_time(-kMax, kMax), 0);
  EXPECT_EQ(time_from_ns(1.4), 1);
  EXPECT_EQ(time_from_ns(-2.6), -3);
  EXPECT_EQ(time_from_ns(static_cast<double>(kMax)), kMax);
  EXPECT_EQ(error_of([] { add_time(kMaxTimeNs, 1); }),
            "a predicted time of 9.0072e+15 ns passes 2^53 ns (104 days): the profile's "
            "durations, summed or scaled by this graph's tiles, are implausible");
  EXPECT_THROW(add_time(-kMax, -1), TimeOverflow);
  // Past 2^63 too: the sum is checked before it could wrap.
  EXPECT_THROW(add_time(std::numeric_limits<TimeNs>::max(), 1), TimeOverflow);
  EXPECT_THROW(add_time(std::numeric_limits<TimeNs>::min(), -1), TimeOverflow);
  EXPECT_THROW(time_from_ns(1e300), TimeOverflow);
  EXPECT_THROW(time_from_ns(-1e300), TimeOverflow);
  EXPECT_THROW(time_from_ns(std::numeric_limits<double>::infinity()), TimeOverflow);
  EXPECT_THROW(time_from_ns(std::numeric_limits<double>::quiet_NaN()), TimeOverflow);
}

// 1 TB/s and 1 B: done at 1 ns. At 10^-9 B/ns, 10^8 B would take 10^17 ns: past 2^53.
TEST(SharedBandwidthTest, ATransferPast2To53NsThrows) {
  Recorder r;
  SharedBandwidth fast(1000);
  fast.start(0, 1, &r, 0);
  EXPECT_EQ(fast.next_event_time(), 1);
  SharedBandwidth slow(1e-9);
  slow.start(0, 1e8, &r, 0);
  EXPECT_THROW(slow.next_event_time(), TimeOverflow);
}

}  // namespace
}  // namespace megacut::simulator
