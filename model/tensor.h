// Tensors of the model IR and the tile grids laid over op outputs.
//
// Every op writes one output tensor, cut into a uniform grid of tiles over a 2-D logical view
// (rows = tokens, cols = features). Dependencies between ops are computed on these grids: a
// consumer tile names the boxes of its inputs it reads, and every producer tile overlapping one
// of those boxes becomes an edge of the tile graph.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace megacut::model {

enum class DType { bf16, f32, i32 };

int dtype_bytes(DType dtype);
std::string_view dtype_name(DType dtype);

// What a tensor is for: weights are read-only parameters, state persists across stages (the
// KV cache), inputs come from the host (token ids), activations live within one stage run.
enum class TensorRole { input, activation, weight, state };

std::string_view role_name(TensorRole role);

// A shape as text for messages: "[16, 8, 3]".
std::string shape_text(std::span<const int64_t> shape);

struct Tensor {
  std::string name;  // weights carry their Hugging Face name
  TensorRole role = TensorRole::activation;
  DType dtype = DType::bf16;
  std::vector<int64_t> shape;

  int64_t elements() const;
  int64_t bytes() const;
};

// A half-open box [row_begin, row_end) x [col_begin, col_end) in an op's output grid.
struct Box {
  int64_t row_begin = 0;
  int64_t row_end = 0;
  int64_t col_begin = 0;
  int64_t col_end = 0;

  int64_t rows() const { return row_end - row_begin; }
  int64_t cols() const { return col_end - col_begin; }
  bool empty() const { return row_end <= row_begin || col_end <= col_begin; }
  friend bool operator==(const Box&, const Box&) = default;
};

// A uniform grid of tiles over a (rows, cols) output; edge tiles may be smaller.
// Tile t sits at grid position (t / col_tiles, t % col_tiles): row-major.
struct Tiling {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t tile_rows = 0;
  int64_t tile_cols = 0;

  int64_t row_tiles() const { return (rows + tile_rows - 1) / tile_rows; }
  int64_t col_tiles() const { return (cols + tile_cols - 1) / tile_cols; }
  int64_t count() const { return row_tiles() * col_tiles(); }
  Box tile_box(int64_t tile) const;
  // Tiles whose box overlaps `box`, in increasing order.
  std::vector<int64_t> tiles_overlapping(const Box& box) const;
};

// The kernels that read their operands through tensor maps walk an op's tiles in groups of this
// many row tiles, each group one column of tiles at a time, so that the CTAs running at once
// share a few row blocks of the input and a few column blocks of the weights in L2
// (executor/conventional.cu's device twin of grouped_tile).
inline constexpr int64_t kTileGroupRows = 8;
// The tile the i-th CTA of such a kernel takes.
int64_t grouped_tile(const Tiling& tiling, int64_t i);

}  // namespace megacut::model
