#include "executor/runner.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "executor/bf16.h"
#include "executor/cuda_check.h"
#include "executor/device.h"
#include "executor/device_memory.h"
#include "executor/stage_launcher.h"
#include "model/decoder.h"
#include "model/error.h"

namespace megacut::executor {
namespace {

constexpr int64_t kAlignBytes = 256;

int64_t align_up(int64_t bytes) { return (bytes + kAlignBytes - 1) / kAlignBytes * kAlignBytes; }

std::string gigabytes(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GB", static_cast<double>(bytes) / 1e9);
  return text;
}

// Buffers are shared between stages by name: KV caches (state), the token loop (the prefill's
// argmax output is the next stage's input, and each decode or code predictor step reads and
// rewrites it) and a TTS talker's frame loop (its prefill's frame is the decode step's input).
std::string buffer_key(const model::Graph& graph, const model::Tensor& tensor) {
  if (tensor.role == model::TensorRole::state) return tensor.name;
  if (tensor.name == "next_token" || (graph.stage() != "prefill" && tensor.name == "token_ids")) {
    return "tokens";
  }
  if (tensor.name == "frame" || tensor.name == "prev_frame") return "frame";
  return graph.stage() + "/" + tensor.name;
}

// What a stage input no stage writes holds: ids below the table its op looks them up in, a
// code predictor's step (0: its first table and head), or values of about unit size.
struct InputFill {
  bool ids = false;
  int64_t bound = 0;  // ids in [0, bound)
};

InputFill input_fill(const model::Graph& graph, int tensor) {
  const model::Tensor& t = graph.tensor(tensor);
  if (t.dtype == model::DType::bf16) return {};
  for (const model::Op& op : graph.ops()) {
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (op.inputs[i] != tensor) continue;
      const std::string_view kind = op.kind->name();
      if (kind == "embedding") return {true, graph.tensor(op.weights[0]).shape[0]};
      if (kind == "codebook-sum" || kind == "step-embedding" || kind == "step-head") {
        return {true, i == 0 && kind != "step-head" ? op.attrs.i("entries") : 1};
      }
    }
  }
  throw Error("stage " + graph.stage() + ": no op says what input " + t.name + " holds");
}

struct Stage {
  explicit Stage(model::Graph g) : graph(std::move(g)) {}
  model::Graph graph;
  StageBuffers buffers;
  std::unique_ptr<StageLauncher> launcher;  // made on first launch, from the composition
  CudaGraph cuda_graph;
};

nlohmann::json cost_json(const model::TileCost& cost) {
  return {{"bytes_read", cost.bytes_read},
          {"bytes_written", cost.bytes_written},
          {"flops", cost.flops}};
}

}  // namespace

nlohmann::json Measurement::to_json() const {
  nlohmann::json doc = {{"schema", "megacut.measurement/1"},
                        {"model", model},
                        {"batch", batch},
                        {"prompt_len", prompt_len},
                        {"composition", composition},
                        {"provider", provider},
                        {"linear_providers", model::provider_choice_to_json(providers)},
                        {"pdl", pdl},
                        {"task_timing", task_timing},
                        {"device", device},
                        {"warmup_runs", warmup},
                        {"ttfo", model::stats_to_json(ttfo)},
                        {"decode_step", model::stats_to_json(decode_step)},
                        {"outputs_per_s", outputs_per_s},
                        {"output_unit", output_unit},
                        {"weight_bytes", weight_bytes},
                        {"prefill_cost", cost_json(prefill_cost)},
                        {"decode_cost", cost_json(decode_cost)},
                        {"copy_bytes_per_s", copy_bytes_per_s}};
  if (frames > 0) {
    doc["frames"] = frames;
    nlohmann::json costs = nlohmann::json::object();
    for (const auto& [stage, cost] : stage_costs) costs[stage] = cost_json(cost);
    doc["stage_costs"] = costs;
  }
  if (output_unit == "tokens") doc["tokens_per_s"] = outputs_per_s;
  return doc;
}

struct ScenarioRunner::Impl {
  model::ModelSpec model;
  model::Scenario scenario;
  RunOptions options;
  std::string device_name;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  std::unique_ptr<KernelContext> context;
  WeightArenaPlan weight_plan;
  DeviceArray<std::byte> weights;
  DeviceArray<std::byte> activations;
  std::map<std::string, std::byte*> buffers;            // by buffer_key
  std::vector<std::unique_ptr<Stage>> stages;           // prefill, decode
  std::map<int64_t, std::unique_ptr<Stage>> decode_at;  // generate(): decode by past length
  int64_t kv_capacity = 0;

  std::vector<int32_t> prompt;
  std::vector<float> prefill_logits, decode_logits;
  std::vector<int32_t> decode_tokens;

  Impl(const model::ModelSpec& m, const model::Scenario& s, const HostWeights& host, RunOptions o)
      : model(m), scenario(s), options(o) {
    for (const model::Stage& stage : scenario.stages) {
      stages.push_back(std::make_unique<Stage>(model::build_graph(model, scenario, stage.name)));
    }
    for (const auto& stage : stages) {
      host.check(stage->graph);
      options.providers.check(stage->graph);
    }
    kv_capacity = scenario.prompt_len + std::max(1, options.decode_steps);
    for (const model::Stage& stage : scenario.stages) {
      kv_capacity = std::max(kv_capacity, stage.past_len + stage.seq_len);
    }
    if (kv_capacity > model.decoder.max_position) {
      throw Error("prompt of " + std::to_string(scenario.prompt_len) + " tokens plus " +
                  std::to_string(options.decode_steps) + " decode steps exceeds " +
                  model.config_path.string() + " max_position_embeddings " +
                  std::to_string(model.decoder.max_position));
    }

    std::vector<const model::Graph*> graphs;
    for (const auto& stage : stages) graphs.push_back(&stage->graph);
    weight_plan = plan_weight_arena(graphs);

    // Activation and state buffers, by key, sized before anything is allocated.
    std::map<std::string, int64_t> sizes;
    for (const auto& stage : stages) {
      for (const model::Tensor& t : stage->graph.tensors()) {
        if (t.role == model::TensorRole::weight) continue;
        int64_t bytes = t.bytes();
        if (t.role == model::TensorRole::state) bytes = bytes / t.shape[1] * kv_capacity;
        int64_t& size = sizes[buffer_key(stage->graph, t)];
        size = std::max(size, bytes);
      }
    }
    int64_t activation_bytes = 0;
    for (const auto& [key, bytes] : sizes) activation_bytes += align_up(bytes);

    device_name = current_device().name;
    size_t free_bytes = 0, total_bytes = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    const int64_t needed =
        weight_plan.arena_bytes + activation_bytes + int64_t{KernelContext::kDefaultWorkspaceBytes};
    if (needed > static_cast<int64_t>(free_bytes)) {
      throw Error(model.name + " at batch " + std::to_string(scenario.batch) + ", prompt " +
                  std::to_string(scenario.prompt_len) + " needs " + gigabytes(needed) +
                  " of device memory (weights " + gigabytes(weight_plan.arena_bytes) +
                  ", activations and KV cache " + gigabytes(activation_bytes) + "); " +
                  device_name + " has " + gigabytes(static_cast<int64_t>(free_bytes)) + " free");
    }

    weights = DeviceArray<std::byte>(static_cast<size_t>(weight_plan.arena_bytes));
    {
      const std::vector<std::byte> packed = pack_weight_arena(weight_plan, host);
      CUDA_CHECK(cudaMemcpy(weights.get(), packed.data(), packed.size(), cudaMemcpyHostToDevice));
    }
    activations = DeviceArray<std::byte>(static_cast<size_t>(activation_bytes));
    std::byte* next = activations.get();
    for (const auto& [key, bytes] : sizes) {
      buffers[key] = next;
      next += align_up(bytes);
    }
    // Poison activations so a read of something never written shows up as NaN, not as zeros.
    CUDA_CHECK(cudaMemset(activations.get(), 0xff, static_cast<size_t>(activation_bytes)));

    for (size_t g = 0; g < stages.size(); ++g) {
      stages[g]->buffers = stage_buffers(
          stages[g]->graph, op_weight_pointers(weight_plan, static_cast<int>(g), weights.get()));
    }

    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    if (!options.providers.all_ours()) context = std::make_unique<KernelContext>();
    prepare_kernels();

    fill_inputs();
  }

  // The stage inputs no stage writes (the prompt; a TTS pipeline's frame codes and acoustic
  // frames; a code predictor's step), and the KV cache positions a stage reads that no stage
  // writes (a TTS talker step in the middle of its chunk, a code predictor step past a frame's
  // first): random, the same for every run.
  void fill_inputs() {
    fill_unwritten_cache_rows();
    std::set<std::string> written;
    for (const auto& stage : stages) {
      for (const model::Op& op : stage->graph.ops()) {
        written.insert(buffer_key(stage->graph, stage->graph.tensor(op.output)));
      }
    }
    std::mt19937_64 rng(options.token_seed);
    std::set<std::string> filled;

    for (const auto& stage : stages) {
      const model::Graph& g = stage->graph;
      for (size_t id = 0; id < g.tensors().size(); ++id) {
        const model::Tensor& t = g.tensors()[id];
        const std::string key = buffer_key(g, t);
        if (t.role != model::TensorRole::input || written.contains(key) ||
            !filled.insert(key).second) {
          continue;
        }
        const InputFill fill = input_fill(g, static_cast<int>(id));
        const auto count = static_cast<size_t>(t.elements());
        if (fill.ids) {
          std::uniform_int_distribution<int32_t> draw(0, static_cast<int32_t>(fill.bound) - 1);
          std::vector<int32_t> values(count);
          for (int32_t& v : values) v = draw(rng);
          if (key == "prefill/token_ids") prompt = values;
          CUDA_CHECK(cudaMemcpy(buffers.at(key), values.data(), count * sizeof(int32_t),
                                cudaMemcpyHostToDevice));
        } else {
          std::normal_distribution<float> draw(0.0f, 1.0f);
          std::vector<uint16_t> values(count);
          for (uint16_t& v : values) v = float_to_bf16(draw(rng));
          CUDA_CHECK(cudaMemcpy(buffers.at(key), values.data(), count * sizeof(uint16_t),
                                cudaMemcpyHostToDevice));
        }
      }
    }
    // These writes, the poisoning of the activations and the weights' copy before them have
    // landed before anything runs on `stream`.
    wait_for_legacy_stream();
  }

  void fill_unwritten_cache_rows() {
    struct Cache {
      std::vector<std::pair<int64_t, int64_t>> written;  // positions [begin, end)
      int64_t read_end = 0;
      int64_t width = 0;
    };
    std::map<std::string, Cache> caches;
    for (const auto& stage : stages) {
      const model::Stage& spec = scenario.stage(stage->graph.stage());
      for (const model::Tensor& t : stage->graph.tensors()) {
        if (t.role != model::TensorRole::state) continue;
        Cache& c = caches[buffer_key(stage->graph, t)];
        c.written.emplace_back(spec.past_len, spec.past_len + spec.seq_len);
        c.read_end = std::max(c.read_end, spec.past_len + spec.seq_len);
        c.width = t.shape[2];
      }
    }
    std::mt19937_64 rng(options.token_seed + 1);
    std::normal_distribution<float> draw(0.0f, 1.0f);
    for (const auto& [key, c] : caches) {
      std::vector<uint16_t> row(static_cast<size_t>(c.width));
      for (int64_t position = 0; position < c.read_end; ++position) {
        const bool written = std::any_of(c.written.begin(), c.written.end(), [&](const auto& w) {
          return position >= w.first && position < w.second;
        });
        if (written) continue;
        for (int64_t b = 0; b < scenario.batch; ++b) {
          for (uint16_t& v : row) v = float_to_bf16(draw(rng));
          const int64_t offset = (b * kv_capacity + position) * c.width;
          CUDA_CHECK(cudaMemcpy(buffers.at(key) + offset * sizeof(uint16_t), row.data(),
                                row.size() * sizeof(uint16_t), cudaMemcpyHostToDevice));
        }
      }
    }
  }

  ~Impl() {
    if (start != nullptr) cudaEventDestroy(start);
    if (stop != nullptr) cudaEventDestroy(stop);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }

  StageBuffers stage_buffers(const model::Graph& graph, std::vector<const void*> op_weights) {
    StageBuffers b;
    b.tensors.assign(graph.tensors().size(), nullptr);
    for (size_t id = 0; id < graph.tensors().size(); ++id) {
      const model::Tensor& t = graph.tensors()[id];
      if (t.role != model::TensorRole::weight) b.tensors[id] = buffers.at(buffer_key(graph, t));
    }
    b.op_weights = std::move(op_weights);
    b.kv_capacity = kv_capacity;
    return b;
  }

  // Every stage's launcher and captured graph, made again on next use (the composition or the
  // providers changed).
  void forget_launchers() {
    auto reset = [](Stage& s) {
      std::destroy_at(&s.cuda_graph);  // captured with the old launcher
      std::construct_at(&s.cuda_graph);
      s.launcher.reset();
    };
    for (auto& s : stages) reset(*s);
    for (auto& [past, s] : decode_at) reset(*s);
  }

  // The stage's regions as options.composition cuts it (all conv when it names no stages).
  void launch(Stage& stage) {
    if (!stage.launcher) {
      std::vector<model::Region> regions;
      if (!options.composition.stages.empty()) {
        regions = options.composition.regions(stage.graph.stage());
      }
      RegionOptions mk;
      mk.timing = options.task_timing;
      mk.flagged_hand_overs = !options.counter_hops;
      stage.launcher = std::make_unique<StageLauncher>(
          stage.graph, stage.buffers, regions, options.providers, context.get(), options.pdl, mk);
    }
    stage.launcher->launch(stream);
  }

  // Waits for the stream; throws if a megakernel region of the stage gave up.
  void check(Stage& stage) {
    if (stage.launcher) stage.launcher->check(stream);
  }

  void capture(Stage& stage) {
    if (stage.cuda_graph.captured()) return;
    launch(stage);  // eager first: cuBLASLt picks its plans outside the capture
    CUDA_CHECK(cudaStreamSynchronize(stream));
    check(stage);
    stage.cuda_graph.capture(stream, [&] { launch(stage); });
  }

  Stage& stage(int index) {
    if (index < 0 || index >= static_cast<int>(stages.size())) {
      throw Error("no stage " + std::to_string(index) + " (the scenario has " +
                  std::to_string(stages.size()) + ")");
    }
    return *stages[index];
  }

  Stage& stage(std::string_view name) {
    for (auto& s : stages) {
      if (s->graph.stage() == name) return *s;
    }
    throw Error("no stage " + std::string(name));
  }

  template <class T>
  std::vector<T> download(const std::string& key, size_t count) {
    std::vector<T> host(count);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaMemcpy(host.data(), buffers.at(key), count * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

  // One replay of `stage`'s graph, timed alone with CUDA events.
  double time_replay(Stage& stage) { return time_replays({&stage}); }

  // Replays of the stages' graphs one after another, launched back to back and timed together
  // with CUDA events.
  double time_replays(const std::vector<Stage*>& sequence) {
    CUDA_CHECK(cudaEventRecord(start, stream));
    for (Stage* s : sequence) s->cuda_graph.replay(stream);
    CUDA_CHECK(cudaEventRecord(stop, stream));
    CUDA_CHECK(cudaEventSynchronize(stop));
    for (Stage* s : std::set<Stage*>(sequence.begin(), sequence.end())) check(*s);
    float elapsed_ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&elapsed_ms, start, stop));
    return elapsed_ms;
  }

  std::vector<Stage*> sequence(model::Sequence which) {
    std::vector<Stage*> order;
    for (const std::string& name : model::stage_sequence(scenario, which)) {
      order.push_back(&stage(name));
    }
    return order;
  }
};

ScenarioRunner::ScenarioRunner(const model::ModelSpec& model, const model::Scenario& scenario,
                               const HostWeights& weights, RunOptions options)
    : impl_(std::make_unique<Impl>(model, scenario, weights, options)) {}

ScenarioRunner::~ScenarioRunner() = default;

int64_t ScenarioRunner::device_bytes() const {
  return static_cast<int64_t>(impl_->weights.size() + impl_->activations.size());
}

Measurement ScenarioRunner::measure() {
  Impl& m = *impl_;
  const std::vector<Stage*> first = m.sequence(model::Sequence::first_output);
  const std::vector<Stage*> step = m.sequence(model::Sequence::step);
  for (auto& s : m.stages) m.capture(*s);
  // The first output's stages and a steady-state step alternate, as in serving: each step
  // starts from the caches and token the first output left. (An LLM: one prefill replay, then
  // one decode step; a TTS pipeline: every stage run of the first chunk, then of the next.)
  std::vector<double> ttfo_ms, step_ms;
  for (int i = 0; i < m.options.warmup + m.options.runs; ++i) {
    const bool timed = i >= m.options.warmup;
    const double first_ms = m.time_replays(first);
    const double next_ms = m.time_replays(step);
    if (timed) {
      ttfo_ms.push_back(first_ms);
      step_ms.push_back(next_ms);
    }
  }
  Measurement r;
  r.model = m.model.name;
  r.batch = m.scenario.batch;
  r.prompt_len = m.scenario.prompt_len;
  r.frames = m.scenario.frames;
  r.provider = m.options.providers.describe();
  r.providers = m.options.providers;
  r.pdl = m.options.pdl;
  r.task_timing = m.options.task_timing;
  r.device = m.device_name;
  r.warmup = m.options.warmup;
  r.ttfo = model::compute_stats(ttfo_ms, "ms");
  r.decode_step = model::compute_stats(step_ms, "ms");
  r.outputs_per_s = static_cast<double>(m.scenario.batch) * m.scenario.outputs_per_step /
                    (r.decode_step.p50 / 1e3);
  r.output_unit = m.scenario.output_unit;
  r.weight_bytes = m.weight_plan.arena_bytes;
  r.prefill_cost = m.stage("prefill").graph.total_cost();
  r.decode_cost = m.stage("decode").graph.total_cost();
  for (const auto& s : m.stages)
    r.stage_costs.emplace_back(s->graph.stage(), s->graph.total_cost());
  return r;
}

int ScenarioRunner::stage_count() const { return static_cast<int>(impl_->stages.size()); }

const model::Graph& ScenarioRunner::stage_graph(int stage) const {
  return impl_->stage(stage).graph;
}

const model::ProviderChoice& ScenarioRunner::providers() const { return impl_->options.providers; }

void ScenarioRunner::launch_op(int stage, int op) {
  Impl& m = *impl_;
  const Stage& s = m.stage(stage);
  executor::launch_op(s.graph, op, s.buffers, m.stream, m.options.providers.of(s.graph.stage(), op),
                      m.context.get(), m.options.pdl);
}

std::unique_ptr<MegakernelRegion> ScenarioRunner::make_region(int stage, int op_begin, int op_end,
                                                              RegionOptions options) const {
  const Stage& s = impl_->stage(stage);
  return std::make_unique<MegakernelRegion>(s.graph, op_begin, op_end, s.buffers, options);
}

RegionBody ScenarioRunner::region_body(int stage, int op) const {
  const Stage& s = impl_->stage(stage);
  return executor::region_body(s.graph, op, s.buffers);
}

cudaStream_t ScenarioRunner::stream() const { return impl_->stream; }

void ScenarioRunner::capture(int stage) { impl_->capture(impl_->stage(stage)); }

double ScenarioRunner::time_replay_ms(int stage) {
  Stage& s = impl_->stage(stage);
  impl_->capture(s);
  return impl_->time_replay(s);
}

void ScenarioRunner::set_composition(model::Composition composition) {
  Impl& m = *impl_;
  CUDA_CHECK(cudaStreamSynchronize(m.stream));
  m.options.composition = std::move(composition);
  m.forget_launchers();
  // Poisoned again, as when made: a region that fails to write a tensor shows up as NaN instead
  // of passing on what the previous composition left there.
  CUDA_CHECK(cudaMemset(m.activations.get(), 0xff, m.activations.size()));
  m.fill_inputs();
}

void ScenarioRunner::set_pdl(bool pdl) {
  Impl& m = *impl_;
  CUDA_CHECK(cudaStreamSynchronize(m.stream));
  m.options.pdl = pdl;
  m.forget_launchers();
}

bool ScenarioRunner::pdl() const { return impl_->options.pdl; }

void ScenarioRunner::set_providers(model::ProviderChoice providers) {
  Impl& m = *impl_;
  CUDA_CHECK(cudaStreamSynchronize(m.stream));
  for (const auto& stage : m.stages) providers.check(stage->graph);
  if (!providers.all_ours() && !m.context) m.context = std::make_unique<KernelContext>();
  m.options.providers = std::move(providers);
  m.forget_launchers();
}

std::vector<float> ScenarioRunner::stage_logits(int stage) {
  Impl& m = *impl_;
  const model::Graph& g = m.stage(stage).graph;
  for (const model::Tensor& t : g.tensors()) {
    if (t.name == "logits") {
      return m.download<float>(buffer_key(g, t), static_cast<size_t>(t.elements()));
    }
  }
  throw Error("stage " + g.stage() + " has no logits");
}

std::vector<std::byte> ScenarioRunner::tensor_bytes(int stage, int tensor) {
  Impl& m = *impl_;
  const model::Graph& g = m.stage(stage).graph;
  const model::Tensor& t = g.tensor(tensor);
  if (t.role == model::TensorRole::weight) {
    throw Error("tensor_bytes: " + t.name + " of stage " + g.stage() + " is a weight");
  }
  return m.download<std::byte>(buffer_key(g, t),
                               static_cast<size_t>(t.elements() * model::dtype_bytes(t.dtype)));
}

std::vector<const MegakernelRegion*> ScenarioRunner::mk_regions(int stage) const {
  const auto& launcher = impl_->stage(stage).launcher;
  return launcher ? launcher->mk_regions() : std::vector<const MegakernelRegion*>{};
}

void ScenarioRunner::synchronize() { CUDA_CHECK(cudaStreamSynchronize(impl_->stream)); }

void ScenarioRunner::generate(int steps) {
  Impl& m = *impl_;
  if (m.model.tts) throw Error("generate: greedy generation is for LLMs, not " + m.model.name);
  if (m.scenario.prompt_len + steps > m.kv_capacity) {
    throw Error("generate: " + std::to_string(steps) + " steps need a KV cache for " +
                std::to_string(m.scenario.prompt_len + steps) +
                " positions; the runner was made for " + std::to_string(m.kv_capacity) +
                " (RunOptions::decode_steps)");
  }
  const int64_t batch = m.scenario.batch;
  const int64_t vocab = m.model.decoder.vocab_size;
  Stage& prefill = m.stage("prefill");
  const std::vector<const void*> decode_weights = m.stage("decode").buffers.op_weights;
  m.launch(prefill);
  m.check(prefill);
  m.prefill_logits = m.download<float>("prefill/logits", static_cast<size_t>(batch * vocab));
  m.decode_logits.clear();
  m.decode_tokens.clear();
  for (int k = 0; k < steps; ++k) {
    const int64_t past = m.scenario.prompt_len + k;
    auto& stage = m.decode_at[past];
    if (!stage) {
      model::Stage spec = m.scenario.stage("decode");
      spec.past_len = past;
      stage = std::make_unique<Stage>(model::build_decoder_stage(m.model.decoder, spec, batch));
      stage->buffers = m.stage_buffers(stage->graph, decode_weights);
    }
    const std::vector<int32_t> input = m.download<int32_t>("tokens", static_cast<size_t>(batch));
    m.decode_tokens.insert(m.decode_tokens.end(), input.begin(), input.end());
    m.launch(*stage);
    m.check(*stage);
    const std::vector<float> logits =
        m.download<float>("decode/logits", static_cast<size_t>(batch * vocab));
    m.decode_logits.insert(m.decode_logits.end(), logits.begin(), logits.end());
  }
  CUDA_CHECK(cudaStreamSynchronize(m.stream));
}

const std::vector<int32_t>& ScenarioRunner::prompt_tokens() const { return impl_->prompt; }
const std::vector<float>& ScenarioRunner::prefill_logits() const { return impl_->prefill_logits; }
const std::vector<float>& ScenarioRunner::decode_logits() const { return impl_->decode_logits; }
const std::vector<int32_t>& ScenarioRunner::decode_tokens() const { return impl_->decode_tokens; }

}  // namespace megacut::executor
