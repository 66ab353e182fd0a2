// The op-kind table: for each op kind the executor runs, one row holding whether the tile bodies
// take an op of it (a check of executor/op_checks.h), where its buffers go (its layout, from
// tile_layouts.cuh) and which tile body runs it (a selector of the body type from the op's tile
// shape). It is the one place a body is chosen: the conventional launcher and the megakernel
// regions visit the body it selects, can_implement asks its check, and tile_body_name spells the
// selected type as the compiler names it, so a region's generated source instantiates the very
// type a conventional kernel launches. A new kind is a new row.
//
//   visit_tile_body(graph, op, buffers, [&]<class Body>(const typename Body::Layout& layout) {
//     ...  // Body is e.g. tiles::LinearStreamTile<16, 1, bf16>
//   });
#pragma once

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeinfo>

#include "executor/op_checks.h"
#include "executor/op_support.h"
#include "executor/stage_buffers.h"
#include "executor/tile_layouts.cuh"
#include "model/error.h"
#include "model/graph.h"

namespace megacut::executor {
namespace op_kind_table {

// Calls f.template operator()<kValue>() with the kValue equal to `value`, the last of them for
// any other (the row's check refuses those first).
template <int... kValues, class F>
void by_value(int value, F&& f) {
  constexpr int kAll[] = {kValues...};
  constexpr int kLast = kAll[sizeof...(kValues) - 1];
  const bool found =
      ((value == kValues && kValues != kLast ? (f.template operator()<kValues>(), true) : false) ||
       ...);
  if (!found) f.template operator()<kLast>();
}

// Calls f.template operator()<kValue>() for each kValue.
template <int... kValues, class F>
void each_value(F&& f) {
  (f.template operator()<kValues>(), ...);
}

// Selectors: select(graph, op, pick) calls pick.template operator()<Body>() with the op's body;
// each(visit) calls visit.template operator()<Body>() with every body select may pick.

// One body for every op of the kind.
template <class Body>
struct Only {
  template <class Pick>
  static void select(const model::Graph&, const model::Op&, Pick& pick) {
    pick.template operator()<Body>();
  }
  template <class Visit>
  static void each(Visit& visit) {
    visit.template operator()<Body>();
  }
};

// linear, lm-head, step-head and the fused linears: the tensor-core GEMM where the tile is 128
// rows and kMma allows it (the fused kinds run only on the weight-streaming body), else the
// weight-streaming body for the tile's width (16, 32, 64, 128) and 8-row blocks (1, 2, 4, 8).
template <typename OutT, tiles::LinearFusion kFusion, bool kMma>
struct Linear {
  template <int kCols>
  using Mma = tiles::LinearMmaTile<kCols, OutT>;
  template <int kCols, int kN8>
  using Stream = tiles::LinearStreamTile<kCols, kN8, OutT, kFusion>;

  template <class Pick>
  static void select(const model::Graph&, const model::Op& op, Pick& pick) {
    const LinearShape s = linear_shape(op);
    by_value<16, 32, 64, 128>(s.cols, [&]<int kCols>() {
      if constexpr (kMma) {
        if (s.mma) return pick.template operator()<Mma<kCols>>();
      }
      by_value<1, 2, 4, 8>(s.n8,
                           [&]<int kN8>() { pick.template operator()<Stream<kCols, kN8>>(); });
    });
  }
  template <class Visit>
  static void each(Visit& visit) {
    each_value<16, 32, 64, 128>([&]<int kCols>() {
      if constexpr (kMma) visit.template operator()<Mma<kCols>>();
      each_value<1, 2, 4, 8>([&]<int kN8>() { visit.template operator()<Stream<kCols, kN8>>(); });
    });
  }
};

// norm-linear: normed, or normed_glu where it reads a gate and an up row a feature.
struct NormLinear {
  using Normed = Linear<tiles::bf16, tiles::LinearFusion::normed, false>;
  using NormedGlu = Linear<tiles::bf16, tiles::LinearFusion::normed_glu, false>;

  template <class Pick>
  static void select(const model::Graph& g, const model::Op& op, Pick& pick) {
    if (model::norm_linear_glu(op)) return NormedGlu::select(g, op, pick);
    Normed::select(g, op, pick);
  }
  template <class Visit>
  static void each(Visit& visit) {
    Normed::each(visit);
    NormedGlu::each(visit);
  }
};

// attention: one query row and head a tile (decode) or flash attention over several rows, for
// the op's head_dim (16, 32, 64, 128).
struct Attention {
  template <class Pick>
  static void select(const model::Graph&, const model::Op& op, Pick& pick) {
    const AttentionShape s = attention_shape(op);
    by_value<16, 32, 64, 128>(s.head_dim, [&]<int kHeadDim>() {
      if (s.decode) return pick.template operator()<tiles::AttentionDecodeTile<kHeadDim>>();
      pick.template operator()<tiles::AttentionPrefillTile<kHeadDim>>();
    });
  }
  template <class Visit>
  static void each(Visit& visit) {
    each_value<16, 32, 64, 128>([&]<int kHeadDim>() {
      visit.template operator()<tiles::AttentionDecodeTile<kHeadDim>>();
      visit.template operator()<tiles::AttentionPrefillTile<kHeadDim>>();
    });
  }
};

// qkv-attention: one decode row and query head a tile, straight from qkv, for the op's head_dim.
struct QkvAttention {
  template <class Pick>
  static void select(const model::Graph&, const model::Op& op, Pick& pick) {
    by_value<16, 32, 64, 128>(attention_shape(op).head_dim, [&]<int kHeadDim>() {
      pick.template operator()<tiles::QkvAttentionDecodeTile<kHeadDim>>();
    });
  }
  template <class Visit>
  static void each(Visit& visit) {
    each_value<16, 32, 64, 128>([&]<int kHeadDim>() {
      visit.template operator()<tiles::QkvAttentionDecodeTile<kHeadDim>>();
    });
  }
};

// conv1d (kTranspose false) and conv-transpose1d: the tensor-core implicit GEMM where it takes
// the shape (conv_shape), else the direct body.
template <bool kTranspose>
struct Conv {
  using Direct = std::conditional_t<kTranspose, tiles::ConvTranspose1dTile, tiles::Conv1dTile>;

  template <class Pick>
  static void select(const model::Graph& g, const model::Op& op, Pick& pick) {
    const ConvShape s = conv_shape(g, op);
    if (!s.mma) return pick.template operator()<Direct>();
    by_value<16, 32, 64, 128>(s.cols, [&]<int kCols>() {
      pick.template operator()<tiles::ConvMmaTile<kCols, kTranspose>>();
    });
  }
  template <class Visit>
  static void each(Visit& visit) {
    visit.template operator()<Direct>();
    each_value<16, 32, 64, 128>(
        [&]<int kCols>() { visit.template operator()<tiles::ConvMmaTile<kCols, kTranspose>>(); });
  }
};

// A row: the kind, its check, its layout and its body selector. Every body the selector picks
// takes the layout the row builds (checked where a body is visited).
template <class Layout, class Select>
struct Row {
  std::string_view kind;
  std::string (*why_not)(const model::Graph&, const model::Op&);
  Layout (*layout)(const model::Graph&, const model::Op&, const StageBuffers&);
  Select select;
};

template <class Layout, class Select>
Row(std::string_view, std::string (*)(const model::Graph&, const model::Op&),
    Layout (*)(const model::Graph&, const model::Op&, const StageBuffers&), Select)
    -> Row<Layout, Select>;

using tiles::bf16;
using tiles::LinearFusion;

// constinit: function pointers and empty selectors, no initialization order to depend on.
inline constinit const auto kRows = std::tuple{
    Row{"embedding", checks::embedding, embedding_layout, Only<tiles::EmbeddingTile>{}},
    Row{"step-embedding", checks::step_embedding, step_embedding_layout,
        Only<tiles::EmbeddingTile>{}},
    Row{"rmsnorm", checks::rmsnorm, rmsnorm_layout, Only<tiles::RmsNormTile>{}},
    Row{"linear", checks::linear, linear_layout, Linear<bf16, LinearFusion::plain, true>{}},
    Row{"lm-head", checks::lm_head, lm_head_layout, Linear<float, LinearFusion::plain, true>{}},
    Row{"step-head", checks::step_head, step_head_layout,
        Linear<float, LinearFusion::plain, true>{}},
    Row{"norm-linear", checks::norm_linear, norm_linear_layout, NormLinear{}},
    Row{"linear-residual", checks::linear_residual, linear_residual_layout,
        Linear<bf16, LinearFusion::plain, false>{}},
    Row{"qk-norm", checks::qk_norm, qk_norm_layout, Only<tiles::QkNormTile>{}},
    Row{"rope", checks::rope, rope_layout, Only<tiles::RopeTile>{}},
    Row{"kv-append", checks::kv_append, kv_append_layout, Only<tiles::KvAppendTile>{}},
    Row{"attention", checks::attention, attention_layout, Attention{}},
    Row{"qkv-attention", checks::qkv_attention, qkv_attention_layout, QkvAttention{}},
    Row{"silu-mul", checks::silu_mul, silu_mul_layout, Only<tiles::SiluMulTile>{}},
    Row{"residual-add", checks::residual_add, residual_add_layout, Only<tiles::ResidualAddTile>{}},
    Row{"argmax", checks::argmax, argmax_layout, Only<tiles::ArgmaxTile>{}},
    Row{"conv1d", checks::conv, conv_layout, Conv<false>{}},
    Row{"conv-transpose1d", checks::conv, conv_layout, Conv<true>{}},
    Row{"codebook-sum", checks::codebook_sum, codebook_sum_layout, Only<tiles::CodebookSumTile>{}},
    Row{"snake-beta", checks::elementwise, elementwise_layout, Only<tiles::SnakeBetaTile>{}},
    Row{"leaky-relu", checks::elementwise, elementwise_layout, Only<tiles::LeakyReluTile>{}},
    Row{"tanh", checks::elementwise, elementwise_layout, Only<tiles::TanhTile>{}},
    Row{"gelu", checks::elementwise, elementwise_layout, Only<tiles::GeluTile>{}},
    Row{"add-scaled", checks::elementwise, elementwise_layout, Only<tiles::AddScaledTile>{}},
};

// Calls f(row) with the row of `kind`; false where the table has none.
template <class F>
bool with_row(std::string_view kind, F&& f) {
  return std::apply(
      [&](const auto&... row) { return ((row.kind == kind ? (f(row), true) : false) || ...); },
      kRows);
}

// `pick`, for the bodies of `row`: each must take the layout the row builds.
template <class R, class Pick>
auto checked(const R& row, Pick& pick) {
  using Layout = std::invoke_result_t<decltype(row.layout), const model::Graph&, const model::Op&,
                                      const StageBuffers&>;
  return [&pick]<class Body>() {
    static_assert(std::is_same_v<typename Body::Layout, Layout>,
                  "a row's bodies take the layout the row builds");
    pick.template operator()<Body>();
  };
}

// Calls pick.template operator()<Body>() with the body `row` selects for op `op`.
template <class R, class Pick>
void select_body(const R& row, const model::Graph& g, const model::Op& op, Pick& pick) {
  auto pick_checked = checked(row, pick);
  row.select.select(g, op, pick_checked);
}

// The type's name as the compiler spells it in source ("megacut::tiles::LinearStreamTile<16, 1,
// __nv_bfloat16, (megacut::tiles::LinearFusion)0>"): tile_body_name's, so that what NVRTC
// instantiates is the type the table selected, by construction.
template <class T>
std::string type_name() {
  int status = 0;
  const std::unique_ptr<char, decltype(&std::free)> name(
      abi::__cxa_demangle(typeid(T).name(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || name == nullptr) {
    throw Error(std::string("cannot spell the tile body type '") + typeid(T).name() + "'");
  }
  return name.get();
}

// Calls visit.template operator()<Body>() with every body any row may pick (a body some rows
// share, once for each).
template <class Visit>
void for_each_body(Visit&& visit) {
  auto each = [&](const auto& row) {
    auto visit_checked = checked(row, visit);
    row.select.each(visit_checked);
  };
  std::apply([&](const auto&... row) { (each(row), ...); }, kRows);
}

}  // namespace op_kind_table

// Calls visit.template operator()<Body>(layout) with op `op`'s tile body and its layout. The op
// must pass can_implement (op_support.h); a kind without a row throws.
template <class Visit>
void visit_tile_body(const model::Graph& g, int op, const StageBuffers& b, Visit&& visit) {
  const model::Op& o = g.op(op);
  const bool found = op_kind_table::with_row(o.kind->name(), [&](const auto& row) {
    auto with_layout = [&]<class Body>() { visit.template operator()<Body>(row.layout(g, o, b)); };
    op_kind_table::select_body(row, g, o, with_layout);
  });
  if (!found) {
    throw Error("op " + o.name + ": no tile body for op kind '" + std::string(o.kind->name()) +
                "'");
  }
}

}  // namespace megacut::executor
