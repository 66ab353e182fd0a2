// The discrete-event engine: integer nanoseconds, events ordered by (time, insertion sequence)
// so a run replays exactly (ns-3's EventKey), and resource models behind a two-method
// interface (next event time, advance) so the loop never branches on one.
//
// A resource is anything whose state evolves continuously between events and produces
// completions on its own: the shared device bandwidth below is one. At a time where both a
// resource completion and queued events are due, the resources go first, in the order they
// were added; their completions may queue events at the same time, which run after the ones
// already queued.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "model/error.h"

namespace megacut::simulator {

using TimeNs = int64_t;
inline constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();

// The longest time the simulator reckons with: 2^53 ns, some 104 days. Far beyond any run it
// predicts, exact in a double, and small enough that sums of thousands of such times stay inside
// 64 bits. A profile's durations are bounded on read, but the simulator scales them by tile
// counts and sums them over many tasks and runs: without a bound, implausible inputs wrapped
// into negative or plausible-looking times. The two functions below refuse to pass it.
inline constexpr TimeNs kMaxTimeNs = TimeNs{1} << 53;
// What the two functions throw. The engine knows no profile: the simulator catches it and says
// which profile, batch, stage and region the time was predicted for.
class TimeOverflow : public Error {
 public:
  using Error::Error;
};
// Throws TimeOverflow for a predicted time of `ns`.
[[noreturn]] void throw_time_overflow(double ns);
// a + b; throws TimeOverflow when the sum is further than kMaxTimeNs from 0. Inline: the
// megakernel run adds a time per task event.
inline TimeNs add_time(TimeNs a, TimeNs b) {
  TimeNs sum = 0;
  if (__builtin_add_overflow(a, b, &sum) || sum > kMaxTimeNs || sum < -kMaxTimeNs) [[unlikely]] {
    throw_time_overflow(static_cast<double>(a) + static_cast<double>(b));
  }
  return sum;
}
// `ns` rounded to the nearest nanosecond; throws TimeOverflow when it is not finite or is
// further than kMaxTimeNs from 0.
inline TimeNs time_from_ns(double ns) {
  if (!(std::abs(ns) <= static_cast<double>(kMaxTimeNs))) [[unlikely]]
    throw_time_overflow(ns);
  return static_cast<TimeNs>(std::llround(ns));
}

// Receives events and resource completions. `payload` is the handler's own (an index, a
// phase): no allocation per event.
class EventHandler {
 public:
  virtual ~EventHandler() = default;
  virtual void on_event(TimeNs now, int64_t payload) = 0;
};

class Resource {
 public:
  virtual ~Resource() = default;
  // The earliest time at which the resource completes something on its own, or kNever.
  virtual TimeNs next_event_time() const = 0;
  // Moves the resource to `now` and reports every completion due at or before it; returns how
  // many it reported (the engine counts them as events).
  virtual int advance(TimeNs now) = 0;
};

class Engine {
 public:
  // Queues `handler->on_event(at, payload)`; `at` must not be in the past.
  void schedule(TimeNs at, EventHandler* handler, int64_t payload);
  // Resources are not owned; they must outlive run().
  void add_resource(Resource* resource) { resources_.push_back(resource); }
  // Runs until no event is queued and no resource has a completion pending.
  void run();

  TimeNs now() const { return now_; }
  // Queued events run plus resource completions reported.
  int64_t events_processed() const { return events_processed_; }

  // Becomes a copy of `other` (its time, its queued events in the same order), keeping the
  // events that `keep` accepts, after it has rewritten their handler and payload: to continue
  // a run from a copy of its state (simulate_megakernel_prefixes).
  void copy_from(const Engine& other,
                 const std::function<bool(EventHandler*& handler, int64_t& payload)>& keep);

 private:
  struct Event {
    TimeNs time;
    uint64_t sequence;
    EventHandler* handler;
    int64_t payload;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time != b.time ? a.time > b.time : a.sequence > b.sequence;
    }
  };

  std::vector<Event> queue_;  // a heap by Later: the next event at the front
  std::vector<Resource*> resources_;
  TimeNs now_ = 0;
  uint64_t sequence_ = 0;
  int64_t events_processed_ = 0;
};

// Device memory bandwidth as a fluid processor-sharing resource: every transfer in progress
// gets an equal share of `bytes_per_ns`. Kept in virtual time (bytes served to each transfer
// so far), so a join or a completion costs O(log n), not O(n).
class SharedBandwidth final : public Resource {
 public:
  explicit SharedBandwidth(double bytes_per_ns);

  // Starts moving `bytes` (> 0) at `now`; `done->on_event(t, payload)` when the last byte is
  // through. `now` must not precede the last advance.
  void start(TimeNs now, double bytes, EventHandler* done, int64_t payload);
  int active() const { return static_cast<int>(heap_.size()); }
  double bytes_per_ns() const { return bytes_per_ns_; }

  TimeNs next_event_time() const override;
  int advance(TimeNs now) override;

  // Becomes a copy of `other` (same clock, same transfers in progress, same order among them),
  // with every transfer reporting to `done` and its payload less `payload_shift`.
  void copy_from(const SharedBandwidth& other, EventHandler* done, int64_t payload_shift);

 private:
  struct Transfer {
    double finish;  // virtual time at which it completes
    uint64_t sequence;
    EventHandler* done;
    int64_t payload;
  };
  struct Later {
    bool operator()(const Transfer& a, const Transfer& b) const {
      return a.finish != b.finish ? a.finish > b.finish : a.sequence > b.sequence;
    }
  };

  // Time at which the first transfer completes if nothing joins before.
  TimeNs first_completion() const;
  void move_to(TimeNs now);

  double bytes_per_ns_;
  double virtual_bytes_ = 0;  // bytes served to each transfer in progress since the start
  TimeNs last_ = 0;
  uint64_t sequence_ = 0;
  std::vector<Transfer> heap_;
};

}  // namespace megacut::simulator
