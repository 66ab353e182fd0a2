// Graph output: the JSON form printed by `megacut graph --json`, and Graphviz dot of the op
// graph.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "model/graph.h"

namespace megacut::model {

nlohmann::json graph_to_json(const Graph& graph);
// Ops as nodes, an edge from each producer op to each consumer op labelled by access pattern.
std::string graph_to_dot(const Graph& graph);
int64_t tile_edge_count(const Graph& graph);

}  // namespace megacut::model
