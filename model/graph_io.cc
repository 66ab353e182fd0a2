#include "model/graph_io.h"

#include <set>
#include <sstream>

namespace megacut::model {

int64_t tile_edge_count(const Graph& graph) {
  return static_cast<int64_t>(boost::num_edges(graph.tiles()));
}

nlohmann::json graph_to_json(const Graph& graph) {
  using nlohmann::json;
  json ops = json::array();
  for (const Op& op : graph.ops()) {
    const Tensor& out = graph.tensor(op.output);
    const TileCost cost = graph.op_cost(op.index);
    json inputs = json::array();
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const int from = graph.producer(op.inputs[i]);
      inputs.push_back({{"tensor", graph.tensor(op.inputs[i]).name},
                        {"access", access_name(op.kind->access(static_cast<int>(i)))},
                        {"producer", from < 0 ? json(nullptr) : json(graph.op(from).name)}});
    }
    json weights = json::array();
    for (int w : op.weights) weights.push_back(graph.tensor(w).name);
    ops.push_back(
        {{"index", op.index},
         {"name", op.name},
         {"kind", op.kind->name()},
         {"layer", op.layer},
         {"output", {{"name", out.name}, {"shape", out.shape}, {"dtype", dtype_name(out.dtype)}}},
         {"tiling",
          {{"rows", op.tiling.rows},
           {"cols", op.tiling.cols},
           {"tile_rows", op.tiling.tile_rows},
           {"tile_cols", op.tiling.tile_cols},
           {"tiles", op.tiling.count()}}},
         {"inputs", inputs},
         {"weights", weights},
         {"bytes_read", cost.bytes_read},
         {"bytes_written", cost.bytes_written},
         {"flops", cost.flops},
         {"link_bytes", cost.link_bytes}});
  }
  const TileCost total = graph.total_cost();
  return {{"schema", "megacut.graph/1"},
          {"stage", graph.stage()},
          {"batch", graph.batch()},
          {"ops", ops},
          {"totals",
           {{"ops", graph.op_count()},
            {"tasks", graph.task_count()},
            {"tile_edges", tile_edge_count(graph)},
            {"bytes_read", total.bytes_read},
            {"bytes_written", total.bytes_written},
            {"flops", total.flops},
            {"link_bytes", total.link_bytes}}},
          {"parameters", {{"count", graph.parameter_count()}, {"bytes", graph.parameter_bytes()}}}};
}

std::string graph_to_dot(const Graph& graph) {
  std::ostringstream dot;
  dot << "digraph \"" << graph.stage() << "\" {\n  rankdir=TB;\n  node [shape=box];\n";
  for (const Op& op : graph.ops()) {
    dot << "  op" << op.index << " [label=\"" << op.index << " " << op.name << "\\n"
        << op.kind->name() << " · " << op.tiling.count() << " tiles\"];\n";
  }
  for (const Op& op : graph.ops()) {
    std::set<int> seen;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const int from = graph.producer(op.inputs[i]);
      if (from < 0 || !seen.insert(from).second) continue;
      dot << "  op" << from << " -> op" << op.index << " [label=\""
          << access_name(op.kind->access(static_cast<int>(i))) << "\"];\n";
    }
  }
  dot << "}\n";
  return dot.str();
}

}  // namespace megacut::model
