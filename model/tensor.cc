#include "model/tensor.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <numeric>

namespace megacut::model {

std::string shape_text(std::span<const int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    text += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  }
  return text + "]";
}

int dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::bf16:
      return 2;
    case DType::f32:
    case DType::i32:
      return 4;
  }
  return 0;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::bf16:
      return "bf16";
    case DType::f32:
      return "f32";
    case DType::i32:
      return "i32";
  }
  return "?";
}

std::string_view role_name(TensorRole role) {
  switch (role) {
    case TensorRole::input:
      return "input";
    case TensorRole::activation:
      return "activation";
    case TensorRole::weight:
      return "weight";
    case TensorRole::state:
      return "state";
  }
  return "?";
}

int64_t Tensor::elements() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

int64_t Tensor::bytes() const { return elements() * dtype_bytes(dtype); }

Box Tiling::tile_box(int64_t tile) const {
  assert(tile >= 0 && tile < count());
  const int64_t r = tile / col_tiles();
  const int64_t c = tile % col_tiles();
  return Box{r * tile_rows, std::min(rows, (r + 1) * tile_rows), c * tile_cols,
             std::min(cols, (c + 1) * tile_cols)};
}

std::vector<int64_t> Tiling::tiles_overlapping(const Box& box) const {
  std::vector<int64_t> tiles;
  const int64_t row_begin = std::max<int64_t>(box.row_begin, 0);
  const int64_t row_end = std::min(box.row_end, rows);
  const int64_t col_begin = std::max<int64_t>(box.col_begin, 0);
  const int64_t col_end = std::min(box.col_end, cols);
  if (row_end <= row_begin || col_end <= col_begin) return tiles;
  for (int64_t r = row_begin / tile_rows; r <= (row_end - 1) / tile_rows; ++r) {
    for (int64_t c = col_begin / tile_cols; c <= (col_end - 1) / tile_cols; ++c) {
      tiles.push_back(r * col_tiles() + c);
    }
  }
  return tiles;
}

int64_t grouped_tile(const Tiling& tiling, int64_t i) {
  const int64_t cols = tiling.col_tiles();
  const int64_t first = i / (kTileGroupRows * cols) * kTileGroupRows;
  const int64_t height = std::min(kTileGroupRows, tiling.row_tiles() - first);
  const int64_t in_group = i - first * cols;
  return (first + in_group % height) * cols + in_group / height;
}

}  // namespace megacut::model
