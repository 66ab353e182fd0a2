// A region's view of an op's tile body (selected by the op-kind table, op_kind_table.cuh, as
// launch_op's is): the body's kThreads, shared memory, layout bytes and name.
#include <concepts>
#include <cstring>

#include "executor/cuda_check.h"
#include "executor/megakernel_bodies.h"
#include "executor/op_kind_table.cuh"
#include "executor/op_support.h"
#include "model/error.h"

namespace megacut::executor {
namespace {

// What the runtime needs of a tile body (see executor/tiles/common.cuh for what it promises).
// A streamed body's run also takes the CTA's weight cursor, a mapped body's its tensor maps
// (tiles/stream.cuh).
template <class Body>
concept TileBody = requires(const typename Body::Layout& layout, long long tile, char* smem,
                            tiles::StreamCursor& weights, const char* maps) {
  { Body::kThreads } -> std::convertible_to<int>;
  { Body::smem_bytes(layout) } -> std::convertible_to<int>;
  requires requires {
    Body::run(layout, tile, smem);
  } ||(tiles::StreamedBody<Body> && requires { Body::run(layout, tile, smem, weights); }) ||
      (tiles::MappedBody<Body> && requires { Body::run(layout, tile, smem, maps); });
};

template <class Body>
RegionBody describe(const typename Body::Layout& layout) {
  static_assert(TileBody<Body>, "not a tile body: Layout, kThreads, smem_bytes, run");
  static_assert(Body::kThreads % 32 == 0 && Body::kThreads <= 1024, "whole warps, at most 1024");
  static_assert(alignof(typename Body::Layout) <= 16, "layouts are stored 16-byte aligned");
  RegionBody b;
  b.threads = Body::kThreads;
  b.smem_bytes = Body::smem_bytes(layout);
  b.streamed = tiles::StreamedBody<Body>;
  if constexpr (tiles::StreamedBody<Body>) {
    static_assert(Body::kThreads == tiles::kStreamConsumerThreads, "a streamed body's warps");
    b.maps = {Body::map_shape(layout)};
  }
  if constexpr (tiles::MappedBody<Body>) {
    const tiles::OperandMaps maps = Body::operand_maps(layout);
    b.maps = {maps.map[0], maps.map[1]};
  }
  if constexpr (requires { Body::takes_flagged_x(layout); }) {
    b.takes_flagged_x = Body::takes_flagged_x(layout);
    b.gives_flagged_y = Body::gives_flagged_y(layout);
  }
  b.layout.resize(sizeof layout);
  std::memcpy(b.layout.data(), &layout, sizeof layout);
  return b;
}

}  // namespace

RegionBody region_body(const model::Graph& graph, int op, const StageBuffers& buffers,
                       FlaggedWords flagged) {
  if (Support s = can_implement(graph, op); !s) throw Error(s.reason);
  RegionBody b;
  visit_tile_body(graph, op, buffers, [&]<class Body>(const typename Body::Layout& layout) {
    typename Body::Layout l = layout;
    if constexpr (requires { l.x_flagged = flagged.x; }) {
      l.x_flagged = flagged.x;
      l.y_flagged = flagged.y;
    }
    b = describe<Body>(l);
  });
  b.name = tile_body_name(graph, op);
  const std::string what = graph.op(op).name + " (" + b.name + ")";
  if (flagged.x != nullptr && !b.takes_flagged_x) {
    throw Error(what + " cannot take its x as flagged words");
  }
  if (flagged.y != nullptr && !b.gives_flagged_y) {
    throw Error(what + " cannot give its y as flagged words");
  }
  return b;
}

}  // namespace megacut::executor
