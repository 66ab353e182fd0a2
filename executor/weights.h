// Model weights on the host: loaded from a Hugging Face checkpoint or generated, checked against
// a stage graph, packed for the device, saved so transformers loads them.
//
// Every weight is bf16, keyed by its Hugging Face name (model.layers.0.self_attn.q_proj.weight).
// Random weights are a pure function of (seed, tensor name): each tensor comes out the same
// whatever the order of generation and whichever stage graph asked for it, so a prefill and a
// decode graph, a saved checkpoint and a regenerated set all agree bit for bit.
//
// On the device an op sees its weights as one [N, K] row-major matrix: its weight tensors
// concatenated in op.weights order (q, k, v). A WeightArenaPlan places every op's matrix in one
// arena, so the runner makes one allocation and one copy; ops naming the same tensors (a tied
// embedding and lm-head, the same layer in the prefill and decode graphs) share one slot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "executor/safetensors.h"
#include "model/config.h"
#include "model/graph.h"

namespace megacut::executor {

// One bf16 tensor, immutable and cheap to copy: the values are shared (owned, or a view into a
// mapped checkpoint file kept alive with it).
class HostTensor {
 public:
  HostTensor() = default;
  HostTensor(std::vector<int64_t> shape, std::vector<uint16_t> values);
  HostTensor(std::vector<int64_t> shape, std::span<const uint16_t> view,
             std::shared_ptr<const void> keep_alive);

  const std::vector<int64_t>& shape() const { return shape_; }
  std::span<const uint16_t> values() const { return values_; }  // bf16 bits, row-major
  int64_t elements() const { return static_cast<int64_t>(values_.size()); }
  int64_t bytes() const { return elements() * 2; }

 private:
  std::vector<int64_t> shape_;
  std::shared_ptr<const void> storage_;
  std::span<const uint16_t> values_;
};

// Fills one tensor's values (bf16 bits) as random weights: normal(0, 0.02) for matrices, 1 +
// uniform(-0.1, 0.1) for norm scales (1-D tensors named *norm*), never zero. A pure function of
// (seed, name, shape).
void generate_random(uint64_t seed, std::string_view name, std::span<const int64_t> shape,
                     std::span<uint16_t> values);

class HostWeights {
 public:
  HostWeights() = default;
  explicit HostWeights(std::string source) : source_(std::move(source)) {}

  // The safetensors of a checkpoint (a file, or a directory as safetensors::Checkpoint opens).
  // BF16 tensors are used in place from the mapped file; F32 and F16 are rounded to bf16; tensors
  // of other dtypes are kept aside, for check() to report.
  static HostWeights load(const std::filesystem::path& path);
  // Random weights for every weight tensor `graph` names, generated in parallel.
  static HostWeights random(const model::Graph& graph, uint64_t seed);
  // Random weights for every weight tensor the graphs name, each once.
  static HostWeights random(std::span<const model::Graph> graphs, uint64_t seed);
  // Random weights for the whole model: every weight any stage names.
  static HostWeights random(const model::ModelSpec& model, uint64_t seed);

  // Where the weights come from, for messages: a path, or "random weights (seed 7)".
  const std::string& source() const { return source_; }
  void add(std::string name, HostTensor tensor);
  const HostTensor* find(std::string_view name) const;
  // Throws naming the tensor and the source when absent.
  const HostTensor& at(std::string_view name) const;
  const std::map<std::string, HostTensor, std::less<>>& tensors() const { return tensors_; }
  int64_t total_bytes() const;

  // Throws unless every weight tensor `graph` names is here with its shape and dtype; the message
  // lists each mismatch ("model.layers.3.mlp.up_proj.weight: expected [8192, 2048] bf16,
  // checkpoint has [8192, 1024]") and every missing tensor. Tensors the graph does not name are
  // ignored.
  void check(const model::Graph& graph) const;

  // Rank `rank`'s slices of the weights `rank_graph` names (one rank's graph of tensor parallel
  // over `tp` GPUs, model::build_graph), cut from these full ones as the graph's shapes say: a
  // tensor of its full shape is every rank's; one of tp times fewer rows holds rows [rank * rows,
  // (rank + 1) * rows) (column-parallel linears, tables sliced by vocabulary); one of tp times
  // fewer columns those columns (row-parallel linears). Throws naming a tensor that is missing or
  // whose shape is none of these.
  HostWeights rank(const model::Graph& rank_graph, int64_t tp, int64_t rank) const;

 private:
  struct Unsupported {
    safetensors::Dtype dtype;
    std::vector<int64_t> shape;
  };

  std::string source_;
  std::map<std::string, HostTensor, std::less<>> tensors_;
  std::map<std::string, Unsupported, std::less<>> unsupported_;
};

// A checkpoint directory: its config.json and its weights.
struct LoadedCheckpoint {
  model::ModelSpec model;
  HostWeights weights;
};
LoadedCheckpoint load_checkpoint(const std::filesystem::path& dir);

// Writes `dir`/config.json (the model's config as read) and the weights as model.safetensors (or
// shards and an index above `max_shard_bytes`), after checking them against the model, so that
// transformers' AutoModelForCausalLM.from_pretrained(dir) loads the directory. A tied embedding
// is written once, with no lm_head.weight, as transformers saves it.
void save_checkpoint(const std::filesystem::path& dir, const model::ModelSpec& model,
                     const HostWeights& weights,
                     int64_t max_shard_bytes = safetensors::kDefaultMaxShardBytes);

// ---------------------------------------------------------------------------------------------
// The device layout of weights: one arena, one slot per distinct list of op weights.

struct WeightSlot {
  struct Part {
    std::string name;
    std::vector<int64_t> shape;
  };
  // In op.weights order: concatenated along dim 0 where their other dimensions agree, else end
  // to end (a kernel, then its bias).
  std::vector<Part> parts;
  // The concatenated shape, e.g. [(heads + 2 kv_heads) * hd, hidden], or [elements] end to end.
  std::vector<int64_t> shape;
  int64_t offset_bytes = 0;  // into the arena, a multiple of the plan's alignment
  int64_t bytes = 0;
};

struct WeightArenaPlan {
  std::vector<WeightSlot> slots;
  std::vector<std::vector<int>> op_slot;  // [graph][op] -> slot, or -1 for ops without weights
  int64_t arena_bytes = 0;
  int64_t alignment_bytes = 0;

  // The byte offset of op `op` of graph `graph` in the arena, or -1 if it has no weights.
  int64_t op_offset_bytes(int graph, int op) const;
};

inline constexpr int64_t kWeightAlignmentBytes = 256;  // cudaMalloc's alignment

// Plans one arena for the ops of all `graphs` (e.g. the prefill and decode stages of one
// scenario). Throws if an op's weights cannot be concatenated (their trailing dims differ).
WeightArenaPlan plan_weight_arena(std::span<const model::Graph* const> graphs,
                                  int64_t alignment_bytes = kWeightAlignmentBytes);
WeightArenaPlan plan_weight_arena(const model::Graph& graph,
                                  int64_t alignment_bytes = kWeightAlignmentBytes);

// Fills `arena` (plan.arena_bytes, e.g. pinned memory) with the packed weights; padding is zero.
// Throws if a tensor is missing or has another shape than the plan's.
void pack_weight_arena(const WeightArenaPlan& plan, const HostWeights& weights,
                       std::span<std::byte> arena);
std::vector<std::byte> pack_weight_arena(const WeightArenaPlan& plan, const HostWeights& weights);

// StageBuffers::op_weights for graph `graph`, given where the arena lives on the device.
std::vector<const void*> op_weight_pointers(const WeightArenaPlan& plan, int graph,
                                            const void* arena);

}  // namespace megacut::executor
