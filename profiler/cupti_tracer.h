// CUPTI activity tracing of kernels (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), and the tags that
// tie each kernel record to what the host was doing when it launched it (stage_trace.h says how).
//
// CUPTI is loaded at run time rather than linked: a megacut binary on a machine without CUPTI
// still runs every other command, and `megacut profile` says what is missing. CUPTI takes one
// subscriber per process, so the tracer is a process-wide singleton; it fails with a clear message
// when another tool (Nsight Systems, Nsight Compute, the PyTorch profiler) already holds CUPTI.
//
// Tagging goes through CUPTI's callback API (driver and runtime domains, entry sites only): while
// a Scope lives on a thread, each CUDA call the thread makes records (correlation id -> tag). The
// callbacks are on only inside a trace window, and return at once for untagged calls.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "profiler/stage_trace.h"

namespace megacut::profiler {

class CuptiTracer {
 public:
  // Loads CUPTI and subscribes, once per process. Throws megacut::Error when CUPTI cannot be
  // loaded, is older than the headers megacut was built with, or is held by another subscriber.
  static CuptiTracer& instance();

  // Starts a trace window: kernel activity records and the tagging callbacks on. Throws if a
  // window is already open.
  void start();
  // Waits for the device, ends the window, flushes CUPTI's buffers (cuptiActivityFlushAll) and
  // returns what the window saw, with the count of records CUPTI dropped.
  TraceWindow stop();
  bool tracing() const;
  // Runs `launches` in a window of its own and returns its kernels by tag, `window` (if given)
  // what it saw. Throws megacut::Error naming `where` if CUPTI dropped records or a kernel came
  // from an untagged call; closes the window if `launches` throws.
  TaggedKernels trace(const std::string& where, const std::function<void()>& launches,
                      TraceWindow* window = nullptr);

  // "CUPTI API version 130001, from <library path>".
  std::string describe() const;

  // CUDA calls this thread makes while a Scope lives carry `tag`; scopes nest.
  class Scope {
   public:
    explicit Scope(Tag tag);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    uint64_t previous_;
  };

  struct State;

 private:
  CuptiTracer() = default;
};

}  // namespace megacut::profiler
