// can_implement and tile_body_name (op_support.h), answered by the op-kind table.
#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <typeinfo>

#include "executor/op_kind_table.cuh"
#include "executor/op_support.h"
#include "model/error.h"

namespace megacut::executor {
namespace {

// The type's name as the compiler spells it in source ("megacut::tiles::LinearStreamTile<16, 1,
// __nv_bfloat16, (megacut::tiles::LinearFusion)0>"): what NVRTC instantiates is then the type
// the table selected, by construction.
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

}  // namespace

Support can_implement(const model::Graph& graph, int op) {
  const model::Op& o = graph.op(op);
  std::string reason;
  const bool found = op_kind_table::with_row(
      o.kind->name(), [&](const auto& row) { reason = row.why_not(graph, o); });
  if (!found) reason = "no tile body for op kind '" + std::string(o.kind->name()) + "'";
  if (reason.empty()) return {};
  return {false, "op " + o.name + " (" + std::string(o.kind->name()) + "): " + reason};
}

std::string tile_body_name(const model::Graph& graph, int op) {
  if (Support s = can_implement(graph, op); !s) throw Error(s.reason);
  const model::Op& o = graph.op(op);
  std::string name;
  op_kind_table::with_row(o.kind->name(), [&](const auto& row) {
    auto spell = [&]<class Body>() { name = type_name<Body>(); };
    op_kind_table::select_body(row, graph, o, spell);
  });
  return name;
}

}  // namespace megacut::executor
