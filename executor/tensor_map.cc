#include "executor/tensor_map.h"

#include <cstdint>

#include "executor/driver_entry.h"
#include "model/error.h"

namespace megacut::executor {

CUtensorMap encode_tensor_map(const tiles::TensorMapShape& shape, const std::string& what) {
  using Encode =
      CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  static const Encode encode = [] {
    Encode fn = nullptr;
    driver_entry("cuTensorMapEncodeTiled", fn);
    return fn;
  }();
  const auto base = reinterpret_cast<uintptr_t>(shape.base);
  if (base % 16 != 0 || shape.k % 8 != 0 || shape.k <= 0 || shape.rows <= 0) {
    throw Error(what + ": the copy engine cannot stream a (" + std::to_string(shape.rows) + ", " +
                std::to_string(shape.k) + ") bf16 matrix at " + std::to_string(base) +
                ": base and rows must be 16-byte aligned");
  }
  if (shape.box_k <= 0 || shape.box_k > 256 || shape.box_k % 8 != 0 || shape.box_rows <= 0 ||
      shape.box_rows > 256) {
    throw Error(what + ": a box of " + std::to_string(shape.box_rows) + " rows by " +
                std::to_string(shape.box_k) + " elements is beyond the copy engine's 256");
  }
  if (shape.swizzle_bytes != 0 && (shape.swizzle_bytes != 128 || shape.box_k * 2 > 128)) {
    throw Error(what + ": a " + std::to_string(shape.swizzle_bytes) + "-byte swizzle of boxes " +
                std::to_string(shape.box_k) +
                " elements wide: only the 128-byte swizzle of rows up to 128 bytes is made");
  }
  CUtensorMap map{};
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(shape.k),
                              static_cast<cuuint64_t>(shape.rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(shape.k) * 2};  // bytes, of dim 1
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(shape.box_k),
                             static_cast<cuuint32_t>(shape.box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r =
      encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(shape.base), dims,
             strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
             shape.swizzle_bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    throw Error(what + ": cuTensorMapEncodeTiled failed (error " + std::to_string(r) + ") for a (" +
                std::to_string(shape.rows) + ", " + std::to_string(shape.k) +
                ") bf16 matrix in boxes of (" + std::to_string(shape.box_rows) + ", " +
                std::to_string(shape.box_k) + ")");
  }
  return map;
}

OperandMapParams encode_operand_maps(const tiles::OperandMaps& maps, const std::string& what) {
  OperandMapParams p;
  p.map[0] = encode_tensor_map(maps.map[0], what + "'s x");
  p.map[1] = encode_tensor_map(maps.map[1], what + "'s weights");
  return p;
}

}  // namespace megacut::executor
