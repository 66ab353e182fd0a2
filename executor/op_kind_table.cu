// can_implement and tile_body_name (op_support.h), answered by the op-kind table.
#include <string>

#include "executor/op_kind_table.cuh"
#include "executor/op_support.h"
#include "model/error.h"

namespace megacut::executor {

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
    auto spell = [&]<class Body>() { name = op_kind_table::type_name<Body>(); };
    op_kind_table::select_body(row, graph, o, spell);
  });
  return name;
}

}  // namespace megacut::executor
