// What a megakernel region needs of each op's tile body on the host: its launch shape (kThreads,
// shared memory for this op's layout) and its layout as bytes for the device table. The body
// is the one launch_op runs (the op-kind table selects both, executor/op_kind_table.cuh), so a
// region and a conventional kernel run the same arithmetic.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "executor/stage_buffers.h"
#include "executor/tiles/stream_shape.h"
#include "model/graph.h"

namespace megacut::executor {

struct RegionBody {
  std::string name;               // tile_body_name: the C++ type the generated kernel instantiates
  int threads = 0;                // Body::kThreads
  int smem_bytes = 0;             // the body's scratch
  bool streamed = false;          // its weights come through the CTA's ring (tiles/stream.cuh)
  std::vector<std::byte> layout;  // Body::Layout's bytes
  // The tensor maps the body reads through, kept one after the other beside its layout: a
  // streamed body's weights; a mapped body's operands (tiles::MappedBody).
  std::vector<tiles::TensorMapShape> maps;
  // Whether the body, on this layout, can wait on x as flagged words and read it from them, and
  // write y as flagged words besides y (tiles/flagged.cuh).
  bool takes_flagged_x = false;
  bool gives_flagged_y = false;
};

// Where a region hands an op's x or y over as flagged words: the words (null: none).
struct FlaggedWords {
  const unsigned long long* x = nullptr;
  unsigned long long* y = nullptr;
};

// Throws megacut::Error where can_implement fails or a buffer is missing, or where `flagged`
// names words the body cannot take or give.
RegionBody region_body(const model::Graph& graph, int op, const StageBuffers& buffers,
                       FlaggedWords flagged = {});

}  // namespace megacut::executor
