// Ops and op kinds. An op kind says, for one tile of an op's output, what it costs (bytes read,
// bytes written, FLOPs) and which boxes of each activation input it reads. Kinds live in a
// registry keyed by name, so a new model family adds kinds without touching the core.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/tensor.h"

namespace megacut::model {

class Graph;

// How a consumer tile's reads of one input relate to its own box; printed in graph summaries
// and used by the simulator to tell streaming from gathering access.
enum class Access {
  one_to_one,    // the same box of the input
  full_row,      // whole rows of the input (a reduction over features)
  head_grouped,  // the columns of one attention head or head group, same rows
  windowed,      // a window of rows of the same sequence (attention over keys)
};

std::string_view access_name(Access access);

struct TileCost {
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  int64_t flops = 0;
  int64_t link_bytes = 0;  // sent to other GPUs (tensor parallel's collectives), per GPU
  // Of bytes_read, those no kernel of the stage writes, which a streamed body takes through its
  // CTA's ring (tiles/stream.cuh): a linear's weight rows, qkv-attention's cached keys and values.
  // A tile may load them before its inputs are ready (a megakernel's ring streams them ahead of
  // the task).
  int64_t stream_bytes = 0;

  TileCost& operator+=(const TileCost& other) {
    bytes_read += other.bytes_read;
    bytes_written += other.bytes_written;
    flops += other.flops;
    link_bytes += other.link_bytes;
    stream_bytes += other.stream_bytes;
    return *this;
  }
};

// Numeric parameters of an op (heads, eps, rope theta, ...), kept generic so the core holds no
// model-specific fields. Lookups of a missing attribute are a builder bug and throw.
class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, double>> values) : values_(values) {}
  void set(const std::string& key, double value) { values_[key] = value; }
  bool has(std::string_view key) const { return values_.find(key) != values_.end(); }
  double f(std::string_view key) const;
  int64_t i(std::string_view key) const;
  const std::map<std::string, double, std::less<>>& all() const { return values_; }

 private:
  std::map<std::string, double, std::less<>> values_;
};

class OpKind;

struct Op {
  int index = 0;
  std::string name;  // e.g. "layers.3.mlp.down"
  const OpKind* kind = nullptr;
  std::vector<int> inputs;   // activation/state/input tensor ids, in the kind's input order
  std::vector<int> weights;  // weight tensor ids
  int output = -1;
  Tiling tiling;
  Attrs attrs;
  int layer = -1;  // decoder layer, or -1 outside the layer stack
};

// An integer attribute as an int (heads, head_dim, ...); throws as Attrs::i does.
inline int attr_int(const Op& op, std::string_view key) {
  return static_cast<int>(op.attrs.i(key));
}

class OpKind {
 public:
  virtual ~OpKind() = default;
  virtual std::string_view name() const = 0;
  virtual int input_count() const = 0;
  virtual Access access(int input) const = 0;
  // Boxes of input `input` that output tile `out` reads, in the producer's tile coordinates.
  virtual std::vector<Box> input_boxes(const Op& op, const Graph& graph, int input,
                                       const Box& out) const = 0;
  virtual TileCost tile_cost(const Op& op, const Graph& graph, const Box& out) const = 0;
};

// Rows of one step of a step-embedding's tables or a step-head's heads (stacked along rows,
// input 1 the step): the attr "entries" where the op has it, else the output's columns.
int64_t step_entries(const Graph& graph, const Op& op);

// Whether a norm-linear has attr glu = 1: its weights are gate rows then as many up rows, and it
// writes silu(gate) * up, an MLP's gate_up and silu-mul in one op (half the weight rows as
// output features).
bool norm_linear_glu(const Op& op);

// Whether `op` is a collective of tensor parallel (all-reduce, all-reduce-residual, all-gather):
// it moves data between GPUs, and signals no tile counter a kernel beside it could wait on.
bool is_collective(const Op& op);

// Bytes each of `ranks` GPUs sends over its links for a ring collective of kind `kind` (an op
// kind of is_collective) on a message of `message_bytes` (what each rank holds; an all-gather's
// result): (ranks - 1) / ranks of the message for an all-gather, twice that for an all-reduce
// (reduce-scatter, then all-gather). A collective's tiles send this of their boxes.
int64_t ring_link_bytes(std::string_view kind, int64_t message_bytes, int64_t ranks);

// The registry of op kinds. Built-in kinds are present from the first lookup.
const OpKind& op_kind(std::string_view name);
const OpKind* find_op_kind(std::string_view name);
void register_op_kind(std::unique_ptr<OpKind> kind);
std::vector<std::string_view> op_kind_names();

}  // namespace megacut::model
