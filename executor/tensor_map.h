// The tensor map of a matrix a body reads through the copy engine (tiles/stream_shape.h's
// TensorMapShape: a weight-streaming body's weights, the GEMM body's x and W): what the copy
// engine needs to cut a row-major bf16 matrix into boxes. A conventional kernel takes it as a
// kernel parameter; a megakernel region keeps it beside the op's layout.
#pragma once

#include <cuda.h>

#include <string>

#include "executor/tiles/stream_shape.h"

namespace megacut::executor {

// Throws megacut::Error, naming `what`, where the shape breaks the copy engine's rules (a base or
// row not 16-byte aligned, a box over 256, a swizzled box row over 128 bytes) or the driver
// refuses it.
CUtensorMap encode_tensor_map(const tiles::TensorMapShape& shape, const std::string& what);

// A mapped body's tensor maps (tiles::MappedBody), x's then W's, as one kernel parameter: the
// body reads them where the kernel took them (__grid_constant__).
struct OperandMapParams {
  CUtensorMap map[2];
};
static_assert(sizeof(CUtensorMap) == tiles::kTensorMapBytes, "maps one after the other");

// encode_tensor_map of both; `what` names the op.
OperandMapParams encode_operand_maps(const tiles::OperandMaps& maps, const std::string& what);

}  // namespace megacut::executor
