// The tensor map of a weight-streaming body's weights (tiles/stream_shape.h's StreamMapShape):
// what the copy engine needs to cut a row-major bf16 matrix into boxes. A conventional kernel
// takes it as a kernel parameter; a megakernel region keeps it beside the op's layout.
#pragma once

#include <cuda.h>

#include <string>

#include "executor/tiles/stream_shape.h"

namespace megacut::executor {

// Throws megacut::Error, naming `what`, where the shape breaks the copy engine's rules (a base or
// row not 16-byte aligned, a box over 256) or the driver refuses it.
CUtensorMap encode_weight_map(const tiles::StreamMapShape& shape, const std::string& what);

}  // namespace megacut::executor
