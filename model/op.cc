#include "model/op.h"

#include <algorithm>
#include <cmath>
#include <mutex>

#include "model/error.h"

namespace megacut::model {

// Defined in op_kinds.cc and op_kinds_audio.cc: append the built-in kinds.
void register_builtin_op_kinds(std::vector<std::unique_ptr<OpKind>>& kinds);
void register_audio_op_kinds(std::vector<std::unique_ptr<OpKind>>& kinds);

std::string_view access_name(Access access) {
  switch (access) {
    case Access::one_to_one:
      return "one-to-one";
    case Access::full_row:
      return "full-row";
    case Access::head_grouped:
      return "head-grouped";
    case Access::windowed:
      return "windowed";
  }
  return "?";
}

double Attrs::f(std::string_view key) const {
  const auto it = values_.find(key);
  if (it == values_.end()) throw Error("op attribute '" + std::string(key) + "' is not set");
  return it->second;
}

int64_t Attrs::i(std::string_view key) const { return std::llround(f(key)); }

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<std::unique_ptr<OpKind>> kinds;
};

Registry& registry() {
  static Registry* instance = [] {
    auto* r = new Registry;  // never destroyed: ops refer to their kinds until exit
    register_builtin_op_kinds(r->kinds);
    register_audio_op_kinds(r->kinds);
    return r;
  }();
  return *instance;
}

}  // namespace

const OpKind* find_op_kind(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const auto& kind : r.kinds) {
    if (kind->name() == name) return kind.get();
  }
  return nullptr;
}

const OpKind& op_kind(std::string_view name) {
  const OpKind* kind = find_op_kind(name);
  if (kind == nullptr) throw Error("unknown op kind '" + std::string(name) + "'");
  return *kind;
}

void register_op_kind(std::unique_ptr<OpKind> kind) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const auto& existing : r.kinds) {
    if (existing->name() == kind->name()) {
      throw Error("op kind '" + std::string(kind->name()) + "' is registered twice");
    }
  }
  r.kinds.push_back(std::move(kind));
}

std::vector<std::string_view> op_kind_names() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string_view> names;
  for (const auto& kind : r.kinds) names.push_back(kind->name());
  return names;
}

}  // namespace megacut::model
