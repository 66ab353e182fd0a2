// conv1d and conv-transpose1d. Two bodies share ConvLayout, chosen by the op's shape: the
// tensor-core implicit GEMM (ConvMmaTile, conv_mma.cuh) for dense convolutions whose input
// channels are whole 8-channel chunks, with tiles 16, 32, 64 or 128 channels wide and at most
// 128 rows (conv-transpose1d: stride phases of ceil(tile_rows / stride) rows, each padded to
// 16, within 128) and staging that fits the shared-memory budget; the direct bodies
// (conv_direct.cuh) for everything else. The host picks (the op-kind table,
// executor/op_kind_table.cuh, by conv_shape).
#pragma once

#include "executor/tiles/conv_direct.cuh"
#include "executor/tiles/conv_mma.cuh"
