#include "simulator/engine.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <string>

namespace megacut::simulator {

void throw_time_overflow(double ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", ns);
  throw TimeOverflow(std::string("a predicted time of ") + text +
                     " ns passes 2^53 ns (104 days): the profile's durations, summed or scaled "
                     "by this graph's tiles, are implausible");
}

void Engine::schedule(TimeNs at, EventHandler* handler, int64_t payload) {
  assert(at >= now_);
  queue_.push_back(Event{at, sequence_++, handler, payload});
  std::push_heap(queue_.begin(), queue_.end(), Later{});
}

void Engine::run() {
  for (;;) {
    TimeNs next_resource = kNever;
    for (const Resource* r : resources_)
      next_resource = std::min(next_resource, r->next_event_time());
    const TimeNs next_event = queue_.empty() ? kNever : queue_.front().time;
    if (next_resource == kNever && next_event == kNever) return;
    if (next_resource <= next_event) {
      now_ = next_resource;
      for (Resource* r : resources_) {
        if (r->next_event_time() <= now_) events_processed_ += r->advance(now_);
      }
    } else {
      std::pop_heap(queue_.begin(), queue_.end(), Later{});
      const Event e = queue_.back();
      queue_.pop_back();
      now_ = e.time;
      e.handler->on_event(now_, e.payload);
      ++events_processed_;
    }
  }
}

void Engine::copy_from(const Engine& other,
                       const std::function<bool(EventHandler*&, int64_t&)>& keep) {
  queue_.clear();
  for (Event e : other.queue_) {
    if (keep(e.handler, e.payload)) queue_.push_back(e);
  }
  std::make_heap(queue_.begin(), queue_.end(), Later{});
  now_ = other.now_;
  sequence_ = other.sequence_;
}

SharedBandwidth::SharedBandwidth(double bytes_per_ns) : bytes_per_ns_(bytes_per_ns) {
  assert(bytes_per_ns > 0);
}

void SharedBandwidth::start(TimeNs now, double bytes, EventHandler* done, int64_t payload) {
  assert(bytes > 0);
  move_to(now);
  heap_.push_back(Transfer{virtual_bytes_ + bytes, sequence_++, done, payload});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

TimeNs SharedBandwidth::first_completion() const {
  // n transfers each get bytes_per_ns / n: the first needs (finish - served) * n / rate more.
  const double remaining = std::max(0.0, heap_.front().finish - virtual_bytes_);
  const double ns = remaining * static_cast<double>(heap_.size()) / bytes_per_ns_;
  return add_time(last_, time_from_ns(std::ceil(ns)));
}

TimeNs SharedBandwidth::next_event_time() const {
  return heap_.empty() ? kNever : first_completion();
}

void SharedBandwidth::move_to(TimeNs now) {
  assert(now >= last_);
  if (!heap_.empty()) {
    virtual_bytes_ +=
        static_cast<double>(now - last_) * bytes_per_ns_ / static_cast<double>(heap_.size());
  }
  last_ = now;
}

int SharedBandwidth::advance(TimeNs now) {
  // Complete in order of finish: each completion changes the share of the others.
  int completed = 0;
  while (!heap_.empty()) {
    const TimeNs t = first_completion();
    if (t > now) break;
    move_to(t);
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    const Transfer done = heap_.back();
    heap_.pop_back();
    done.done->on_event(t, done.payload);
    ++completed;
  }
  move_to(now);
  return completed;
}

void SharedBandwidth::copy_from(const SharedBandwidth& other, EventHandler* done,
                                int64_t payload_shift) {
  bytes_per_ns_ = other.bytes_per_ns_;
  virtual_bytes_ = other.virtual_bytes_;
  last_ = other.last_;
  sequence_ = other.sequence_;
  heap_ = other.heap_;
  for (Transfer& t : heap_) {
    t.done = done;
    t.payload -= payload_shift;
  }
}

}  // namespace megacut::simulator
