#include "executor/weights.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <set>
#include <thread>

#include "executor/bf16.h"
#include "model/decoder.h"
#include "model/error.h"
#include "model/output_file.h"

namespace megacut::executor {
namespace {

namespace fs = std::filesystem;

using model::shape_text;

int64_t element_count(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// ---------------------------------------------------------------------------------------------
// Random numbers: counter-based, so element i of a tensor is a function of (key, i) alone and
// any split of the work over threads gives the same bytes.

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

// SplitMix64's finalizer: a bijection that scrambles every input bit into every output bit.
constexpr uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Draw `j` for element `index`: SplitMix64's output at position `index` of stream `j`. Draw 0
// serves almost every element; later draws only the rare rejections of the ziggurat.
inline uint64_t draw(uint64_t key, uint64_t index, uint64_t j) {
  return mix64((j == 0 ? key : key ^ mix64(j)) + index * kGolden);
}

// Uniform in (0, 1), never 0 or 1.
inline double open_unit(uint64_t bits) {
  return (static_cast<double>(static_cast<int64_t>(bits >> 11)) + 0.5) * 0x1p-53;
}

uint64_t tensor_key(uint64_t seed, std::string_view name) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a
  for (char c : name) hash = (hash ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return mix64(mix64(seed + kGolden) ^ hash);
}

// The standard normal by Marsaglia and Tsang's ziggurat (Doornik's 128-layer ZIGNOR tables):
// one draw, one table lookup and one compare for ~99% of samples, exact in distribution.
constexpr int kLayers = 128;
constexpr double kTailStart = 3.442619855899;       // R: where the base layer's tail begins
constexpr double kLayerArea = 9.91256303526217e-3;  // V: the area of every layer

struct Ziggurat {
  std::array<double, kLayers + 1> x{};  // layer i spans [0, x[i]); x[0] is the base's width
  std::array<float, kLayers> x_float{};
  std::array<float, kLayers> inner{};  // x[i + 1] / x[i]: below it a sample is inside the curve

  Ziggurat() {
    double f = std::exp(-0.5 * kTailStart * kTailStart);
    x[0] = kLayerArea / f;
    x[1] = kTailStart;
    for (int i = 2; i < kLayers; ++i) {
      x[i] = std::sqrt(-2.0 * std::log(kLayerArea / x[i - 1] + f));
      f = std::exp(-0.5 * x[i] * x[i]);
    }
    x[kLayers] = 0.0;
    for (int i = 0; i < kLayers; ++i) {
      x_float[i] = static_cast<float>(x[i]);
      inner[i] = static_cast<float>(x[i + 1] / x[i]);
    }
  }
};

const Ziggurat& ziggurat() {
  static const Ziggurat z;
  return z;
}

// The ~1% of samples outside a layer's inner rectangle: the base layer's tail, or a wedge.
[[gnu::noinline]] double normal_slow(uint64_t key, uint64_t index, uint64_t bits) {
  const Ziggurat& z = ziggurat();
  for (uint64_t j = 1;; bits = draw(key, index, j++)) {
    const int layer = static_cast<int>(bits & (kLayers - 1));
    const double u = static_cast<double>(static_cast<int32_t>(bits >> 32) | 1) * 0x1p-31;
    if (std::fabs(u) < z.x[layer + 1] / z.x[layer]) return u * z.x[layer];
    if (layer == 0) {
      double a = 0, b = 0;
      do {
        a = std::log(open_unit(draw(key, index, j++))) / kTailStart;
        b = std::log(open_unit(draw(key, index, j++)));
      } while (-2.0 * b < a * a);
      return u < 0 ? a - kTailStart : kTailStart - a;
    }
    const double x = u * z.x[layer];
    const double f0 = std::exp(-0.5 * (z.x[layer] * z.x[layer] - x * x));
    const double f1 = std::exp(-0.5 * (z.x[layer + 1] * z.x[layer + 1] - x * x));
    if (f1 + open_unit(draw(key, index, j++)) * (f0 - f1) < 1.0) return x;
  }
}

inline float standard_normal(uint64_t key, uint64_t index) {
  const Ziggurat& z = ziggurat();
  const uint64_t bits = draw(key, index, 0);
  const int layer = static_cast<int>(bits & (kLayers - 1));
  // An odd 32-bit integer over 2^31: uniform in (-1, 1), never 0.
  const float u = static_cast<float>(static_cast<int32_t>(bits >> 32) | 1) * 0x1p-31f;
  if (std::fabs(u) < z.inner[layer]) return u * z.x_float[layer];
  return static_cast<float>(normal_slow(key, index, bits));
}

constexpr float kLinearStd = 0.02f;
constexpr float kNormSpread = 0.1f;

bool is_norm_weight(std::string_view name, std::span<const int64_t> shape) {
  return shape.size() == 1 && name.find("norm") != std::string_view::npos;
}

// Elements [begin, end) of a tensor.
void generate_range(uint64_t key, bool norm, std::span<uint16_t> values, int64_t begin,
                    int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    uint16_t bits = 0;
    if (norm) {
      const float u = static_cast<float>(open_unit(draw(key, i, 0)));
      bits = float_to_bf16(1.0f + 2.0f * kNormSpread * (u - 0.5f));
    } else {
      bits = float_to_bf16(kLinearStd * standard_normal(key, i));
      // Unreachable in practice (|sample| > 1e-10), but weights are never zero by contract.
      for (uint64_t retry = 1; (bits & 0x7fffu) == 0; ++retry) {
        bits = float_to_bf16(kLinearStd * standard_normal(mix64(key + retry), i));
      }
    }
    values[i] = bits;
  }
}

// The weight tensors the graphs name, each once.
std::vector<const model::Tensor*> weight_tensors(std::span<const model::Graph> graphs) {
  std::vector<const model::Tensor*> weights;
  std::set<std::string_view> seen;
  for (const model::Graph& graph : graphs) {
    for (const model::Tensor& t : graph.tensors()) {
      if (t.role == model::TensorRole::weight && seen.insert(t.name).second) weights.push_back(&t);
    }
  }
  return weights;
}

// Graphs that name every weight of the model, each stage at batch 1 with a one-token prompt:
// an LLM's stages name the same weights, so its decode step is enough; a TTS pipeline's stages
// name different ones.
std::vector<model::Graph> whole_model_graphs(const model::ModelSpec& model) {
  std::vector<model::Graph> graphs;
  if (!model.tts) {
    graphs.push_back(
        model::build_decoder_stage(model.decoder, model::Stage{"decode", 1, 0, 0, 1}, 1));
    return graphs;
  }
  const model::Scenario scenario = model::make_scenario(model, 1, 1, 1);
  for (const model::Stage& s : scenario.stages) {
    graphs.push_back(model::build_graph(model, scenario, s.name));
  }
  return graphs;
}

std::vector<uint16_t> to_bf16(safetensors::Dtype dtype, std::span<const std::byte> bytes) {
  const size_t width = static_cast<size_t>(safetensors::dtype_bytes(dtype));
  std::vector<uint16_t> values(bytes.size() / width);
  for (size_t i = 0; i < values.size(); ++i) {
    const std::byte* p = bytes.data() + i * width;
    if (dtype == safetensors::Dtype::F32) {
      float f = 0;
      std::memcpy(&f, p, sizeof f);
      values[i] = float_to_bf16(f);
    } else {
      uint16_t h = 0;
      std::memcpy(&h, p, sizeof h);
      values[i] = dtype == safetensors::Dtype::F16 ? float_to_bf16(half_to_float(h)) : h;
    }
  }
  return values;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// HostTensor and HostWeights.

HostTensor::HostTensor(std::vector<int64_t> shape, std::vector<uint16_t> values)
    : shape_(std::move(shape)) {
  if (element_count(shape_) != static_cast<int64_t>(values.size())) {
    throw Error("HostTensor: shape " + shape_text(shape_) + " does not hold " +
                std::to_string(values.size()) + " values");
  }
  auto owned = std::make_shared<const std::vector<uint16_t>>(std::move(values));
  values_ = std::span<const uint16_t>(*owned);
  storage_ = std::move(owned);
}

HostTensor::HostTensor(std::vector<int64_t> shape, std::span<const uint16_t> view,
                       std::shared_ptr<const void> keep_alive)
    : shape_(std::move(shape)), storage_(std::move(keep_alive)), values_(view) {
  if (element_count(shape_) != static_cast<int64_t>(values_.size())) {
    throw Error("HostTensor: shape " + shape_text(shape_) + " does not hold " +
                std::to_string(values_.size()) + " values");
  }
}

void generate_random(uint64_t seed, std::string_view name, std::span<const int64_t> shape,
                     std::span<uint16_t> values) {
  const int64_t n = element_count(shape);
  if (static_cast<int64_t>(values.size()) != n) {
    throw Error("generate_random: '" + std::string(name) + "' has shape " + shape_text(shape) +
                " but " + std::to_string(values.size()) + " values were given");
  }
  generate_range(tensor_key(seed, name), is_norm_weight(name, shape), values, 0, n);
}

HostWeights HostWeights::random(const model::Graph& graph, uint64_t seed) {
  return random(std::span<const model::Graph>(&graph, 1), seed);
}

HostWeights HostWeights::random(std::span<const model::Graph> graphs, uint64_t seed) {
  HostWeights weights("random weights (seed " + std::to_string(seed) + ")");
  struct Job {
    uint64_t key;
    bool norm;
    std::span<uint16_t> values;
    int64_t begin, end;
  };
  constexpr int64_t kChunk = int64_t{1} << 20;
  std::vector<Job> jobs;
  for (const model::Tensor* t : weight_tensors(graphs)) {
    const int64_t n = t->elements();
    // Not value-initialized: the generating threads touch every page themselves.
    std::shared_ptr<uint16_t[]> storage = std::make_unique_for_overwrite<uint16_t[]>(n);
    const std::span<uint16_t> values(storage.get(), static_cast<size_t>(n));
    for (int64_t begin = 0; begin < n; begin += kChunk) {
      jobs.push_back({tensor_key(seed, t->name), is_norm_weight(t->name, t->shape), values, begin,
                      std::min(n, begin + kChunk)});
    }
    weights.add(t->name, HostTensor(t->shape, values, std::move(storage)));
  }

  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t j = next++; j < jobs.size(); j = next++) {
      generate_range(jobs[j].key, jobs[j].norm, jobs[j].values, jobs[j].begin, jobs[j].end);
    }
  };
  const size_t thread_count =
      std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), jobs.size());
  std::vector<std::jthread> threads;
  for (size_t i = 1; i < thread_count; ++i) threads.emplace_back(work);
  work();
  return weights;
}

HostWeights HostWeights::random(const model::ModelSpec& model, uint64_t seed) {
  return random(whole_model_graphs(model), seed);
}

HostWeights HostWeights::load(const fs::path& path) {
  const safetensors::Checkpoint checkpoint(path);
  HostWeights weights(path.string());
  for (const auto& [name, entry] : checkpoint.tensors()) {
    const safetensors::TensorInfo& info = *entry.info;
    const std::span<const std::byte> bytes = entry.file->bytes(info);
    switch (info.dtype) {
      case safetensors::Dtype::BF16:
        if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(uint16_t) == 0) {
          const std::span<const uint16_t> view(reinterpret_cast<const uint16_t*>(bytes.data()),
                                               bytes.size() / 2);
          weights.add(name, HostTensor(info.shape, view, entry.file));
          break;
        }
        [[fallthrough]];  // an odd offset: copy it out
      case safetensors::Dtype::F16:
      case safetensors::Dtype::F32:
        weights.add(name, HostTensor(info.shape, to_bf16(info.dtype, bytes)));
        break;
      default:
        weights.unsupported_[name] = {info.dtype, info.shape};
    }
  }
  return weights;
}

void HostWeights::add(std::string name, HostTensor tensor) {
  unsupported_.erase(name);
  tensors_.insert_or_assign(std::move(name), std::move(tensor));
}

const HostTensor* HostWeights::find(std::string_view name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const HostTensor& HostWeights::at(std::string_view name) const {
  const HostTensor* t = find(name);
  if (t == nullptr) throw Error(source_ + ": no weight tensor '" + std::string(name) + "'");
  return *t;
}

int64_t HostWeights::total_bytes() const {
  int64_t bytes = 0;
  for (const auto& [name, t] : tensors_) bytes += t.bytes();
  return bytes;
}

HostWeights HostWeights::rank(const model::Graph& rank_graph, int64_t tp, int64_t rank) const {
  if (tp < 1 || rank < 0 || rank >= tp) {
    throw Error("weights of rank " + std::to_string(rank) + " of " + std::to_string(tp) +
                " GPUs: no such rank");
  }
  // The graph's own degree: its collectives' ranks (none: one GPU's).
  int64_t degree = 1;
  for (const model::Op& op : rank_graph.ops()) {
    if (op.attrs.has("ranks")) degree = op.attrs.i("ranks");
  }
  if (degree != tp) {
    throw Error("weights of rank " + std::to_string(rank) + " of " + std::to_string(tp) +
                " GPUs: the " + rank_graph.stage() + " graph is one rank's of " +
                std::to_string(degree) + (degree == 1 ? " GPU" : " GPUs"));
  }
  HostWeights out(source_ + ", rank " + std::to_string(rank) + " of " + std::to_string(tp));
  for (const model::Tensor& t : rank_graph.tensors()) {
    if (t.role != model::TensorRole::weight || out.find(t.name) != nullptr) continue;
    const HostTensor& full = at(t.name);
    const std::vector<int64_t>& f = full.shape();
    if (f == t.shape) {
      out.add(t.name, full);
      continue;
    }
    const bool rows =
        f.size() == 2 && t.shape.size() == 2 && t.shape[0] * tp == f[0] && t.shape[1] == f[1];
    const bool cols =
        f.size() == 2 && t.shape.size() == 2 && t.shape[0] == f[0] && t.shape[1] * tp == f[1];
    if (!rows && !cols) {
      throw Error(t.name + ": " + source_ + " has " + shape_text(f) + ", rank " +
                  std::to_string(rank) + " of " + std::to_string(tp) + " GPUs needs " +
                  shape_text(t.shape) + ", which is neither its rows nor its columns split " +
                  std::to_string(tp) + " ways");
    }
    const std::span<const uint16_t> v = full.values();
    std::vector<uint16_t> slice;
    slice.reserve(static_cast<size_t>(t.shape[0] * t.shape[1]));
    if (rows) {
      const int64_t begin = rank * t.shape[0] * f[1];
      slice.assign(v.begin() + begin, v.begin() + begin + t.shape[0] * f[1]);
    } else {
      for (int64_t r = 0; r < f[0]; ++r) {
        const auto row = v.begin() + r * f[1] + rank * t.shape[1];
        slice.insert(slice.end(), row, row + t.shape[1]);
      }
    }
    out.add(t.name, HostTensor(t.shape, std::move(slice)));
  }
  return out;
}

void HostWeights::check(const model::Graph& graph) const {
  std::vector<std::string> mismatched;
  std::vector<std::string> missing;
  for (const model::Tensor* t : weight_tensors(std::span<const model::Graph>(&graph, 1))) {
    const std::string expected = t->name + ": expected " + shape_text(t->shape) + " " +
                                 std::string(model::dtype_name(t->dtype)) + ", checkpoint has ";
    if (const auto u = unsupported_.find(t->name); u != unsupported_.end()) {
      mismatched.push_back(expected + shape_text(u->second.shape) + " " +
                           std::string(safetensors::dtype_name(u->second.dtype)) +
                           " (not a float dtype)");
    } else if (const HostTensor* have = find(t->name); have == nullptr) {
      missing.push_back(t->name);
    } else if (t->dtype != model::DType::bf16) {
      mismatched.push_back(expected + shape_text(have->shape()) + " bf16");
    } else if (have->shape() != t->shape) {
      mismatched.push_back(expected + shape_text(have->shape()));
    }
  }
  if (mismatched.empty() && missing.empty()) return;
  std::string message = source_ + ": weights do not fit the " + graph.stage() + " graph (" +
                        std::to_string(mismatched.size()) + " mismatched, " +
                        std::to_string(missing.size()) + " missing)";
  for (const std::string& m : mismatched) message += "\n  " + m;
  if (!missing.empty()) {
    message += "\n  missing:";
    for (const std::string& m : missing) message += " " + m;
  }
  throw Error(message);
}

LoadedCheckpoint load_checkpoint(const fs::path& dir) {
  LoadedCheckpoint loaded{model::load_model(dir.string()), HostWeights::load(dir)};
  return loaded;
}

void save_checkpoint(const fs::path& dir, const model::ModelSpec& model, const HostWeights& weights,
                     int64_t max_shard_bytes) {
  const std::vector<model::Graph> graphs = whole_model_graphs(model);
  for (const model::Graph& graph : graphs) weights.check(graph);
  std::vector<safetensors::TensorData> tensors;
  for (const model::Tensor* t : weight_tensors(graphs)) {
    tensors.push_back(
        {t->name, safetensors::Dtype::BF16, t->shape, std::as_bytes(weights.at(t->name).values())});
  }
  safetensors::write_checkpoint(dir, tensors, max_shard_bytes);
  model::write_text_file(dir / "config.json", model.config.dump(2) + "\n");
}

// ---------------------------------------------------------------------------------------------
// The weight arena.

int64_t WeightArenaPlan::op_offset_bytes(int graph, int op) const {
  const int slot = op_slot.at(graph).at(op);
  return slot < 0 ? -1 : slots[slot].offset_bytes;
}

WeightArenaPlan plan_weight_arena(std::span<const model::Graph* const> graphs,
                                  int64_t alignment_bytes) {
  if (alignment_bytes <= 0 || (alignment_bytes & (alignment_bytes - 1)) != 0) {
    throw Error("plan_weight_arena: alignment " + std::to_string(alignment_bytes) +
                " is not a power of two");
  }
  WeightArenaPlan plan;
  plan.alignment_bytes = alignment_bytes;
  std::map<std::vector<std::string>, int> slot_of;
  for (const model::Graph* graph : graphs) {
    std::vector<int>& op_slot = plan.op_slot.emplace_back(graph->op_count(), -1);
    for (const model::Op& op : graph->ops()) {
      if (op.weights.empty()) continue;
      WeightSlot slot;
      std::vector<std::string> names;
      const model::Tensor& first = graph->tensor(op.weights.front());
      // Parts whose trailing dimensions agree (fused q/k/v) stack along the first; others (a
      // convolution's kernel and bias) lie end to end, the slot one flat run of elements.
      bool stacked = true;
      int64_t elements = 0;
      for (int id : op.weights) {
        const model::Tensor& t = graph->tensor(id);
        if (t.shape.empty() || t.dtype != first.dtype) {
          throw Error("op " + op.name + ": weights " + first.name + " " +
                      std::string(model::dtype_name(first.dtype)) + " and " + t.name + " " +
                      std::string(model::dtype_name(t.dtype)) + " " + shape_text(t.shape) +
                      " cannot share one buffer");
        }
        stacked = stacked && t.shape.size() == first.shape.size() &&
                  std::equal(t.shape.begin() + 1, t.shape.end(), first.shape.begin() + 1);
        slot.parts.push_back({t.name, t.shape});
        slot.bytes += t.bytes();
        elements += t.elements();
        names.push_back(t.name);
      }
      slot.shape = first.shape;
      slot.shape[0] = 0;
      for (const WeightSlot::Part& part : slot.parts) slot.shape[0] += part.shape[0];
      if (!stacked) slot.shape = {elements};

      const auto [it, added] = slot_of.try_emplace(names, static_cast<int>(plan.slots.size()));
      if (added) {
        slot.offset_bytes =
            (plan.arena_bytes + alignment_bytes - 1) / alignment_bytes * alignment_bytes;
        plan.arena_bytes = slot.offset_bytes + slot.bytes;
        plan.slots.push_back(std::move(slot));
      } else if (plan.slots[it->second].shape != slot.shape) {
        throw Error("op " + op.name + ": weights " + names.front() + " have shape " +
                    shape_text(slot.shape) + " here but " +
                    shape_text(plan.slots[it->second].shape) + " in another graph");
      }
      op_slot[op.index] = it->second;
    }
  }
  return plan;
}

WeightArenaPlan plan_weight_arena(const model::Graph& graph, int64_t alignment_bytes) {
  const model::Graph* graphs[] = {&graph};
  return plan_weight_arena(graphs, alignment_bytes);
}

void pack_weight_arena(const WeightArenaPlan& plan, const HostWeights& weights,
                       std::span<std::byte> arena) {
  if (static_cast<int64_t>(arena.size()) != plan.arena_bytes) {
    throw Error("pack_weight_arena: the arena holds " + std::to_string(arena.size()) +
                " bytes, the plan needs " + std::to_string(plan.arena_bytes));
  }
  int64_t filled = 0;  // everything before this byte is written
  for (const WeightSlot& slot : plan.slots) {
    std::memset(arena.data() + filled, 0, static_cast<size_t>(slot.offset_bytes - filled));
    std::byte* out = arena.data() + slot.offset_bytes;
    for (const WeightSlot::Part& part : slot.parts) {
      const HostTensor& t = weights.at(part.name);
      if (t.shape() != part.shape) {
        throw Error(weights.source() + ": " + part.name + ": expected " + shape_text(part.shape) +
                    ", checkpoint has " + shape_text(t.shape()));
      }
      std::memcpy(out, t.values().data(), static_cast<size_t>(t.bytes()));
      out += t.bytes();
    }
    filled = slot.offset_bytes + slot.bytes;
  }
  std::memset(arena.data() + filled, 0, static_cast<size_t>(plan.arena_bytes - filled));
}

std::vector<std::byte> pack_weight_arena(const WeightArenaPlan& plan, const HostWeights& weights) {
  std::vector<std::byte> arena(static_cast<size_t>(plan.arena_bytes));
  pack_weight_arena(plan, weights, arena);
  return arena;
}

std::vector<const void*> op_weight_pointers(const WeightArenaPlan& plan, int graph,
                                            const void* arena) {
  std::vector<const void*> pointers;
  for (int slot : plan.op_slot.at(graph)) {
    pointers.push_back(
        slot < 0 ? nullptr : static_cast<const std::byte*>(arena) + plan.slots[slot].offset_bytes);
  }
  return pointers;
}

}  // namespace megacut::executor
