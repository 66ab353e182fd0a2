// The plain structs a megakernel region's host code and its generated kernel share: the task
// table, the kernel's one parameter, the error record a watchdog writes and the optional
// per-task timing record. Compiled by the host compiler, nvcc and NVRTC alike, so: fixed-size
// fields only, no standard headers.
#pragma once

namespace megacut::executor::mk {

// A task's layout is copied into shared memory before its body runs: at most this many bytes.
inline constexpr int kMaxLayoutBytes = 256;
// The runtime copies this many of a task's dependencies (Dep) into shared memory ahead of it.
inline constexpr int kMaxPrefetchedDeps = 256;

// One task of a region: which body runs it (a case of the generated kernel's switch), where
// its layout is (and, for a streamed body, its weights' tensor map), which tile, and its
// dependencies deps[dep_begin, dep_end). A task's counter is its region-local index; once done
// it also adds one to its op's count, counter op_counter (past the tasks' counters).
struct Task {
  int index;          // region-local task index (global task id - first task of the region)
  int body;           // case of the kernel's switch
  int layout_offset;  // bytes into Params::layouts
  int dep_begin;
  int dep_end;
  int map_offset;    // bytes into Params::layouts of the tensor maps (64-byte aligned); 0: none
  int layout_bytes;  // at most kMaxLayoutBytes
  int op_counter;    // task_count + the op's index in the region
  long long tile;
};

// A dependency: counter `counter` reaching run * count, where run counts launches of the region
// from 1. A task's counter (count 1) is set to the run once the task is done; an op's count
// (count: its tasks) goes up by one with each of its tasks.
struct Dep {
  int counter;
  int count;
};

// Written once by the first wait that gives up; the host reads and clears it.
struct ErrorRecord {
  unsigned int flag;  // 0: no error
  int region;
  int sm;
  int block;
  int task;     // region-local index of the waiting task
  int counter;  // region-local index of the task it waited for
  unsigned long long target;
  unsigned long long seen;
};

// Per task, when timing is compiled in (MEGACUT_MK_TIMING): %globaltimer at start (after its
// waits), end (its consumers done), signal (the signaler saw it done), publish (its counter's
// store issued) and inputs (a body that waits for flagged words has them all; 0 for the others),
// and the SM it ran on. Each CTA also records when it started (Params::cta_entry_ns), so that
// what a region does before its first task shows.
struct TaskTiming {
  unsigned long long start_ns;
  unsigned long long end_ns;
  unsigned long long signal_ns;
  unsigned long long publish_ns;
  unsigned long long inputs_ns;
  unsigned int sm;
  unsigned int block;
};

struct Params {
  const char* layouts;           // layout structs, 16-byte aligned each, and tensor maps
  const Task* tasks;             // queue after queue
  const int* queue_begin;        // (gridDim.x + 1): queue q is tasks[queue_begin[q], [q+1])
  const Dep* deps;               // the tasks' dependencies (Task::dep_begin, dep_end)
  unsigned long long* counters;  // one per task, then one per op: monotonic (Dep)
  unsigned long long* arrivals;  // CTAs started over all launches: the run index, times the grid
  ErrorRecord* error;
  TaskTiming* timings;               // one per task, or null
  unsigned long long* cta_entry_ns;  // one per CTA, with timings: its first instruction's time
  unsigned long long watchdog_ns;    // how long one wait may last before the region gives up
  int ring_offset;                   // bytes into dynamic shared memory: the weight ring's room
  int ring_slots;                    // its slots (tiles/stream.cuh); 0 without streamed bodies
  int region;                        // reported in errors
  int pad;
};

}  // namespace megacut::executor::mk
