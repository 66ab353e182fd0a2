// What the built-in op kind files (op_kinds.cc, op_kinds_audio.cc) share: a kind's fixed name
// and input access patterns, and small helpers over the graph's tensors. Internal to model/.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "model/graph.h"
#include "model/op.h"

namespace megacut::model::kinds {

inline constexpr int64_t kBf16 = 2;

// Shared shape of a kind: name and input access patterns fixed at construction.
class Kind : public OpKind {
 public:
  Kind(std::string_view name, std::vector<Access> access) : name_(name), access_(access) {}
  std::string_view name() const override { return name_; }
  int input_count() const override { return static_cast<int>(access_.size()); }
  Access access(int input) const override { return access_.at(input); }

 private:
  std::string_view name_;
  std::vector<Access> access_;
};

}  // namespace megacut::model::kinds
