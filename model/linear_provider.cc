#include "model/linear_provider.h"

#include <algorithm>

#include "model/error.h"

namespace megacut::model {

std::string_view provider_name(LinearProvider provider) {
  return provider == LinearProvider::ours ? "ours" : "cublaslt";
}

bool cublaslt_can_run(std::string_view op_kind) {
  return op_kind == "linear" || op_kind == "lm-head";
}

std::string_view policy_name(ProviderPolicy policy) {
  switch (policy) {
    case ProviderPolicy::ours:
      return "ours";
    case ProviderPolicy::cublaslt:
      return "cublaslt";
    case ProviderPolicy::fastest:
      return "fastest";
  }
  return "?";
}

std::optional<ProviderPolicy> find_policy(std::string_view name) {
  for (ProviderPolicy p : kProviderPolicies) {
    if (name == policy_name(p)) return p;
  }
  return std::nullopt;
}

ProviderPolicy parse_policy(std::string_view text, std::string_view option) {
  if (const std::optional<ProviderPolicy> p = find_policy(text)) return *p;
  throw Error(std::string(option) + ": '" + std::string(text) +
              "' is not a linear provider (ours, cublaslt, fastest)");
}

ProviderChoice ProviderChoice::uniform(LinearProvider provider) {
  ProviderChoice c;
  c.all_cublaslt = provider == LinearProvider::cublaslt;
  return c;
}

ProviderChoice ProviderChoice::every(const std::vector<const Graph*>& graphs) {
  ProviderChoice c;
  for (const Graph* g : graphs) {
    std::vector<int> ops;
    for (const Op& op : g->ops()) {
      if (cublaslt_can_run(op.kind->name())) ops.push_back(op.index);
    }
    if (!ops.empty()) c.cublaslt_ops[g->stage()] = std::move(ops);
  }
  return c;
}

LinearProvider ProviderChoice::of(std::string_view stage, int op) const {
  if (all_cublaslt) return LinearProvider::cublaslt;
  const auto it = cublaslt_ops.find(stage);
  if (it == cublaslt_ops.end()) return LinearProvider::ours;
  return std::binary_search(it->second.begin(), it->second.end(), op) ? LinearProvider::cublaslt
                                                                      : LinearProvider::ours;
}

int ProviderChoice::listed() const {
  int n = 0;
  for (const auto& [stage, ops] : cublaslt_ops) n += static_cast<int>(ops.size());
  return n;
}

ProviderChoice ProviderChoice::in_conv_regions(const Composition& composition) const {
  if (all_cublaslt) return *this;
  ProviderChoice out;
  for (const StageRegions& s : composition.stages) {
    const auto listed = cublaslt_ops.find(s.stage);
    if (listed == cublaslt_ops.end()) continue;
    std::vector<int> kept;
    for (const Region& r : s.regions) {
      if (r.kind != RegionKind::conv) continue;
      for (int op : listed->second) {
        if (op >= r.begin && op < r.end) kept.push_back(op);
      }
    }
    std::sort(kept.begin(), kept.end());
    if (!kept.empty()) out.cublaslt_ops[s.stage] = std::move(kept);
  }
  return out;
}

void ProviderChoice::check(const Graph& graph) const {
  const auto listed = cublaslt_ops.find(graph.stage());
  if (listed == cublaslt_ops.end()) return;
  for (int op : listed->second) {
    if (op < 0 || op >= graph.op_count()) {
      throw Error("linear providers: stage " + graph.stage() + " has no op " + std::to_string(op) +
                  " (" + std::to_string(graph.op_count()) + " ops)");
    }
    const Op& o = graph.op(op);
    if (!cublaslt_can_run(o.kind->name())) {
      throw Error("linear providers: op " + std::to_string(op) + " of stage " + graph.stage() +
                  " (" + o.name + ", " + std::string(o.kind->name()) +
                  ") cannot run on cuBLASLt: only linear and lm-head ops can");
    }
  }
}

std::string ProviderChoice::describe() const {
  if (all_cublaslt) return "cublaslt";
  if (cublaslt_ops.empty()) return "ours";
  std::string stages;
  for (const auto& [stage, ops] : cublaslt_ops) {
    stages += (stages.empty() ? "" : ", ") + stage + " " + std::to_string(ops.size());
  }
  return "cublaslt for " + std::to_string(listed()) + " ops (" + stages + "), ours otherwise";
}

nlohmann::json provider_choice_to_json(const ProviderChoice& choice) {
  if (choice.all_cublaslt) return "cublaslt";
  if (choice.cublaslt_ops.empty()) return "ours";
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [stage, ops] : choice.cublaslt_ops) j[stage] = ops;
  return j;
}

ProviderChoice provider_choice_from(const JsonField& field, const std::vector<StageShape>& shapes) {
  ProviderChoice c;
  if (field.value().is_string()) {
    const std::string text = field.string();
    if (text == "cublaslt") {
      c.all_cublaslt = true;
    } else if (text != "ours") {
      field.fail("expected \"ours\", \"cublaslt\" or the ops on cuBLASLt by stage, got \"" + text +
                 "\"");
    }
    return c;
  }
  field.object();
  for (const auto& item : field.value().items()) {
    const std::string stage = item.key();
    const JsonField ops = field.at(stage);
    const auto shape = std::find_if(shapes.begin(), shapes.end(),
                                    [&](const StageShape& s) { return s.name == stage; });
    if (shape == shapes.end()) ops.fail("no stage of that name");
    std::vector<int> list;
    for (const JsonField& op : ops.list()) {
      const int index = static_cast<int>(op.integer(0, shape->op_count - 1));
      if (!list.empty() && index <= list.back()) op.fail("op indices must increase");
      list.push_back(index);
    }
    if (!list.empty()) c.cublaslt_ops[stage] = std::move(list);
  }
  return c;
}

}  // namespace megacut::model
