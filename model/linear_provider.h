// Which implementation runs a linear op of a conv region: the conventional kernel of our tile
// body, or cuBLASLt. Only linear and lm-head ops can run on cuBLASLt (cublaslt_can_run); every
// op inside an mk region runs our body, whatever the choice says.
//
// A ProviderChoice says it per op: every op on one provider, or the ops listed per stage on
// cuBLASLt and the rest on ours. The planner derives one per batch from the profile
// (ProviderPolicy::fastest: per op, the kernel the profile measured faster), writes it into
// plan.json, and the executor runs it.
#pragma once

#include <array>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/composition.h"
#include "model/graph.h"
#include "model/json_field.h"

namespace megacut::model {

enum class LinearProvider { ours, cublaslt };
std::string_view provider_name(LinearProvider provider);  // "ours" or "cublaslt"

// Whether an op of this kind can run on cuBLASLt: a linear or the lm-head.
bool cublaslt_can_run(std::string_view op_kind);

// How a prediction or a plan chooses each op's provider: all ours, every op that can on
// cuBLASLt, or per op the faster of the two as the profile measured them: its kernel's mean
// duration in the all-conventional graph, or with PDL what it adds between kernels of ours
// (simulator::Simulator::fastest_cost).
enum class ProviderPolicy { ours, cublaslt, fastest };
inline constexpr std::array<ProviderPolicy, 3> kProviderPolicies = {
    ProviderPolicy::ours, ProviderPolicy::cublaslt, ProviderPolicy::fastest};
std::string_view policy_name(ProviderPolicy policy);  // "ours", "cublaslt" or "fastest"
// The policy of that name, if any.
std::optional<ProviderPolicy> find_policy(std::string_view name);
// Throws an Error naming `option` and the value unless it is one of the names.
ProviderPolicy parse_policy(std::string_view text, std::string_view option);

struct ProviderChoice {
  // Every op that can, on cuBLASLt; `cublaslt_ops` is then empty.
  bool all_cublaslt = false;
  // By stage, the ops on cuBLASLt, increasing; a stage with none is left out.
  std::map<std::string, std::vector<int>, std::less<>> cublaslt_ops;

  static ProviderChoice uniform(LinearProvider provider);
  // Every op of `graphs` that can run on cuBLASLt, listed.
  static ProviderChoice every(const std::vector<const Graph*>& graphs);

  // The provider of op `op` of `stage`, if it is a kind cuBLASLt can run.
  LinearProvider of(std::string_view stage, int op) const;
  bool all_ours() const { return !all_cublaslt && cublaslt_ops.empty(); }
  // The ops listed; 0 for all_cublaslt.
  int listed() const;
  // The listed ops that sit in conv regions of `composition` (all_cublaslt stays so): two
  // listed choices that run a composition the same way give equal ones.
  ProviderChoice in_conv_regions(const Composition& composition) const;
  // Throws an Error naming the op unless every op listed for `graph`'s stage is one of its ops
  // that cuBLASLt can run.
  void check(const Graph& graph) const;
  // "ours", "cublaslt", or "cublaslt for 12 ops (prefill 6, decode 6), ours otherwise".
  std::string describe() const;
  friend bool operator==(const ProviderChoice&, const ProviderChoice&) = default;
};

// JSON form: "ours", "cublaslt", or {"prefill": [3, 7], "decode": [3]} (the ops on cuBLASLt).
nlohmann::json provider_choice_to_json(const ProviderChoice& choice);
// Validates against the stages it will run on (names and op counts); errors name the field.
ProviderChoice provider_choice_from(const JsonField& field, const std::vector<StageShape>& shapes);

}  // namespace megacut::model
