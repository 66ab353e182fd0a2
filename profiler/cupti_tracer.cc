#include "profiler/cupti_tracer.h"

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cxxabi.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "executor/cuda_check.h"
#include "model/error.h"

namespace megacut::profiler {
namespace {

// The tag of the calls this thread makes now; 0 for none (Tag::code() is never 0).
thread_local uint64_t t_tag = 0;

constexpr size_t kBufferBytes = size_t{8} << 20;

// The CUPTI functions megacut calls, from the library loaded at run time.
struct CuptiApi {
  std::string path;
  decltype(&cuptiGetResultString) GetResultString = nullptr;
  decltype(&cuptiGetVersion) GetVersion = nullptr;
  decltype(&cuptiSubscribe) Subscribe = nullptr;
  decltype(&cuptiSubscribe_v2) Subscribe_v2 = nullptr;  // may be absent; names the other tool
  decltype(&cuptiEnableDomain) EnableDomain = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) ActivityRegisterCallbacks = nullptr;
  decltype(&cuptiActivityEnable) ActivityEnable = nullptr;
  decltype(&cuptiActivityDisable) ActivityDisable = nullptr;
  decltype(&cuptiActivityFlushAll) ActivityFlushAll = nullptr;
  decltype(&cuptiActivityGetNextRecord) ActivityGetNextRecord = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) ActivityGetNumDroppedRecords = nullptr;
};

// The library CMake found, then the toolkit's soname, then any.
std::vector<std::string> library_candidates() {
  std::vector<std::string> names;
#ifdef MEGACUT_CUPTI_LIBRARY
  names.push_back(MEGACUT_CUPTI_LIBRARY);
#endif
  names.push_back("libcupti.so." + std::to_string(CUDART_VERSION / 1000));
  names.push_back("libcupti.so");
  return names;
}

template <class F>
void bind_symbol(void* library, const std::string& path, const char* symbol, F& fn,
                 bool required = true) {
  fn = reinterpret_cast<F>(dlsym(library, symbol));
  if (fn == nullptr && required) {
    throw Error("CUPTI (" + path + ") has no " + symbol + "; megacut needs CUPTI from CUDA " +
                std::to_string(CUDART_VERSION / 1000) + " or later");
  }
}

CuptiApi load_cupti() {
  CuptiApi api;
  void* library = nullptr;
  std::string tried;
  for (const std::string& name : library_candidates()) {
    library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) {
      api.path = name;
      break;
    }
    const char* why = dlerror();
    tried += "\n  " + name + ": " + (why != nullptr ? why : "not found");
  }
  if (library == nullptr) {
    throw Error(
        "CUPTI cannot be loaded, so kernels cannot be traced; install the CUDA toolkit's CUPTI "
        "(libcupti) or put its folder on LD_LIBRARY_PATH. Tried:" +
        tried);
  }
  // Never dlclose'd: CUPTI may call back into this process until it ends.
  bind_symbol(library, api.path, "cuptiGetResultString", api.GetResultString);
  bind_symbol(library, api.path, "cuptiGetVersion", api.GetVersion);
  bind_symbol(library, api.path, "cuptiSubscribe", api.Subscribe);
  bind_symbol(library, api.path, "cuptiSubscribe_v2", api.Subscribe_v2, /*required=*/false);
  bind_symbol(library, api.path, "cuptiEnableDomain", api.EnableDomain);
  bind_symbol(library, api.path, "cuptiActivityRegisterCallbacks", api.ActivityRegisterCallbacks);
  bind_symbol(library, api.path, "cuptiActivityEnable", api.ActivityEnable);
  bind_symbol(library, api.path, "cuptiActivityDisable", api.ActivityDisable);
  bind_symbol(library, api.path, "cuptiActivityFlushAll", api.ActivityFlushAll);
  bind_symbol(library, api.path, "cuptiActivityGetNextRecord", api.ActivityGetNextRecord);
  bind_symbol(library, api.path, "cuptiActivityGetNumDroppedRecords",
              api.ActivityGetNumDroppedRecords);
  return api;
}

std::string demangle(const char* name) {
  if (name == nullptr) return "(unnamed kernel)";
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && demangled != nullptr ? demangled : name;
  std::free(demangled);
  return out;
}

}  // namespace

struct CuptiTracer::State {
  CuptiApi api;
  CUpti_SubscriberHandle subscriber = nullptr;
  std::atomic<bool> open{false};
  std::mutex mutex;  // guards everything below
  TraceWindow window;
  std::unordered_map<const char*, std::string> names;  // by CUPTI's shared name pointer
  std::string error;                                   // the first failure inside a callback

  void check(CUptiResult result, const char* what) const {
    if (result == CUPTI_SUCCESS) return;
    const char* text = nullptr;
    api.GetResultString(result, &text);
    throw Error(std::string("CUPTI: ") + what + " failed: " + (text != nullptr ? text : "?"));
  }
};

namespace {

// Never freed: CUPTI may call back until the process ends.
CuptiTracer::State* g_state = nullptr;

void CUPTIAPI on_api_call(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  const uint64_t tag = t_tag;
  if (tag == 0) return;
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* call = static_cast<const CUpti_CallbackData*>(data);
  if (call->callbackSite != CUPTI_API_ENTER) return;
  std::lock_guard lock(g_state->mutex);
  g_state->window.tag_of_call[call->correlationId] = tag;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;  // CUPTI counts what it could not store
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t,
                               size_t valid_bytes) {
  CuptiTracer::State& s = *g_state;
  std::vector<KernelRecord> kernels;
  std::string error;
  {
    std::lock_guard lock(s.mutex);
    CUpti_Activity* record = nullptr;
    for (;;) {
      const CUptiResult r = s.api.ActivityGetNextRecord(buffer, valid_bytes, &record);
      if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
      if (r != CUPTI_SUCCESS) {
        const char* text = nullptr;
        s.api.GetResultString(r, &text);
        error = std::string("CUPTI: reading an activity buffer failed: ") +
                (text != nullptr ? text : "?");
        break;
      }
      if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
          record->kind != CUPTI_ACTIVITY_KIND_KERNEL) {
        continue;
      }
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      auto [name, fresh] = s.names.try_emplace(k->name);
      if (fresh) name->second = demangle(k->name);
      KernelRecord out;
      out.name = name->second;
      out.start_ns = k->start;
      out.end_ns = k->end;
      out.correlation = k->correlationId;
      out.stream = k->streamId;
      out.graph_id = k->graphId;
      out.graph_node = k->graphNodeId;
      out.launch.grid = {k->gridX, k->gridY, k->gridZ};
      out.launch.block = {k->blockX, k->blockY, k->blockZ};
      out.launch.registers = k->registersPerThread;
      out.launch.smem_bytes = int64_t{k->staticSharedMemory} + k->dynamicSharedMemory;
      kernels.push_back(std::move(out));
    }
  }
  size_t dropped = 0;
  if (s.api.ActivityGetNumDroppedRecords(context, stream, &dropped) != CUPTI_SUCCESS) dropped = 0;
  std::free(buffer);
  std::lock_guard lock(s.mutex);
  for (KernelRecord& k : kernels) s.window.kernels.push_back(std::move(k));
  s.window.dropped_records += dropped;
  if (s.error.empty()) s.error = error;
}

}  // namespace

CuptiTracer& CuptiTracer::instance() {
  static CuptiTracer* const tracer = [] {
    auto state = std::make_unique<State>();
    state->api = load_cupti();
    uint32_t version = 0;
    state->check(state->api.GetVersion(&version), "cuptiGetVersion");
    if (version / 10000 < CUPTI_API_VERSION / 10000) {
      throw Error("CUPTI " + state->api.path + " has API version " + std::to_string(version) +
                  ", older than the " + std::to_string(CUPTI_API_VERSION) +
                  " megacut was built with; its kernel records would be misread");
    }
    CUptiResult r;
    char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN * 2] = {};
    if (state->api.Subscribe_v2 != nullptr) {
      CUpti_SubscriberParams params{};
      params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
      params.subscriberName = "megacut profile";
      params.oldSubscriberName = other;
      params.oldSubscriberSize = sizeof other;
      r = state->api.Subscribe_v2(&state->subscriber, on_api_call, nullptr, &params);
    } else {
      r = state->api.Subscribe(&state->subscriber, on_api_call, nullptr);
    }
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      throw Error(std::string("CUPTI is already taken by another subscriber") +
                  (other[0] != '\0' ? std::string(" (") + other + ")" : std::string()) +
                  ": only one tool can trace a process. Run megacut profile outside Nsight "
                  "Systems, Nsight Compute, cuda-gdb, compute-sanitizer and the PyTorch "
                  "profiler");
    }
    state->check(r, "cuptiSubscribe");
    state->check(state->api.ActivityRegisterCallbacks(buffer_requested, buffer_completed),
                 "cuptiActivityRegisterCallbacks");
    g_state = state.release();
    return new CuptiTracer;  // lives as long as the process, as CUPTI's subscription does
  }();
  return *tracer;
}

void CuptiTracer::start() {
  State& s = *g_state;
  if (s.open.exchange(true)) throw Error("CUPTI: a trace window is already open");
  {
    std::lock_guard lock(s.mutex);
    s.window = TraceWindow{};
    s.error.clear();
  }
  s.check(s.api.EnableDomain(1, s.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API), "enabling callbacks");
  s.check(s.api.EnableDomain(1, s.subscriber, CUPTI_CB_DOMAIN_DRIVER_API), "enabling callbacks");
  s.check(s.api.ActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
          "cuptiActivityEnable(CONCURRENT_KERNEL)");
}

TraceWindow CuptiTracer::stop() {
  State& s = *g_state;
  if (!s.open.exchange(false)) throw Error("CUPTI: no trace window is open");
  const cudaError_t synced = cudaDeviceSynchronize();
  s.check(s.api.EnableDomain(0, s.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API), "disabling callbacks");
  s.check(s.api.EnableDomain(0, s.subscriber, CUPTI_CB_DOMAIN_DRIVER_API), "disabling callbacks");
  s.check(s.api.ActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityDisable");
  s.check(s.api.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  // What the buffer callbacks did not see yet (CUDA 12+ keeps one global queue); a CUPTI that
  // does not answer for the null context has reported its drops through them.
  size_t dropped = 0;
  if (s.api.ActivityGetNumDroppedRecords(nullptr, 0, &dropped) != CUPTI_SUCCESS) dropped = 0;
  TraceWindow window;
  std::string error;
  {
    std::lock_guard lock(s.mutex);
    window = std::move(s.window);
    s.window = TraceWindow{};
    error = std::move(s.error);
  }
  window.dropped_records += dropped;
  CUDA_CHECK(synced);
  if (!error.empty()) throw Error(error);
  return window;
}

bool CuptiTracer::tracing() const { return g_state->open; }

std::string CuptiTracer::describe() const {
  uint32_t version = 0;
  g_state->api.GetVersion(&version);
  return "CUPTI API version " + std::to_string(version) + " (" + g_state->api.path + ")";
}

CuptiTracer::Scope::Scope(Tag tag) : previous_(t_tag) { t_tag = tag.code(); }
CuptiTracer::Scope::~Scope() { t_tag = previous_; }

TaggedKernels CuptiTracer::trace(const std::string& where, const std::function<void()>& launches,
                                 TraceWindow* window) {
  start();
  try {
    launches();
  } catch (...) {
    stop();
    throw;
  }
  TraceWindow seen = stop();
  if (seen.dropped_records > 0) {
    throw Error(where + ": CUPTI dropped " + std::to_string(seen.dropped_records) +
                " activity records; the trace is incomplete");
  }
  TaggedKernels tagged = group_by_tag(seen);
  if (!tagged.untagged.empty()) {
    throw Error(where + ": " + std::to_string(tagged.untagged.size()) +
                " kernels came from CUDA calls the profiler did not make (first: " +
                tagged.untagged.front().name + ")");
  }
  if (window != nullptr) *window = std::move(seen);
  return tagged;
}

}  // namespace megacut::profiler
