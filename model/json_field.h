// One value of a JSON document and its path from the root, so that every error names the file
// and the field ("profile.json: field 'batches[2].stages[0].ops[17].conv': missing"). The readers
// of profiles, validations and other documents walk their input through it.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/error.h"
#include "model/stats.h"

namespace megacut::model {

class JsonField {
 public:
  // `value` and `file` must outlive the field and every field taken from it.
  JsonField(const nlohmann::json& value, std::string path, std::string_view file)
      : value_(value), path_(std::move(path)), file_(file) {}

  const nlohmann::json& value() const { return value_; }
  const std::string& path() const { return path_; }

  // Whether `key` is present and not null.
  bool has(std::string_view key) const {
    return value_.is_object() && value_.contains(key) && !value_.at(std::string(key)).is_null();
  }
  JsonField at(std::string_view key) const {
    object();
    if (!has(key)) throw_field_error(file_, child(key), "missing");
    return JsonField(value_.at(std::string(key)), child(key), file_);
  }
  // A key that may be absent or null.
  std::optional<JsonField> optional(std::string_view key) const {
    if (!has(key)) return std::nullopt;
    return at(key);
  }

  void object() const {
    if (!value_.is_object()) fail("expected an object, got " + brief());
  }
  std::vector<JsonField> list() const {
    if (!value_.is_array()) fail("expected a list, got " + brief());
    std::vector<JsonField> items;
    for (size_t i = 0; i < value_.size(); ++i) {
      items.emplace_back(value_[i], path_ + "[" + std::to_string(i) + "]", file_);
    }
    return items;
  }
  std::string string() const {
    if (!value_.is_string()) fail("expected a string, got " + brief());
    return value_.get<std::string>();
  }
  std::vector<std::string> strings() const {
    std::vector<std::string> out;
    for (const JsonField& f : list()) out.push_back(f.string());
    return out;
  }
  int64_t integer(int64_t min, int64_t max = std::numeric_limits<int64_t>::max()) const {
    if (!value_.is_number_integer()) fail("expected an integer, got " + brief());
    // An unsigned value beyond int64_t, which get<int64_t> would wrap into a negative.
    const bool beyond = value_.is_number_unsigned() &&
                        value_.get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()};
    const int64_t v = beyond ? 0 : value_.get<int64_t>();
    if (beyond || v < min || v > max) {
      fail("expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
           "], got " + value_.dump());
    }
    return v;
  }
  uint64_t unsigned_integer() const {
    if (!value_.is_number_unsigned()) fail("expected a non-negative integer, got " + brief());
    return value_.get<uint64_t>();
  }
  double positive_number() const {
    if (!value_.is_number() || !std::isfinite(value_.get<double>()) || value_.get<double>() <= 0) {
      fail("expected a positive number, got " + brief());
    }
    return value_.get<double>();
  }
  double non_negative_number() const {
    if (!value_.is_number() || !std::isfinite(value_.get<double>()) || value_.get<double>() < 0) {
      fail("expected a non-negative number, got " + brief());
    }
    return value_.get<double>();
  }
  bool boolean() const {
    if (!value_.is_boolean()) fail("expected true or false, got " + brief());
    return value_.get<bool>();
  }
  LatencyStats stats() const { return stats_from_json(value_, file_, path_); }
  // Latency statistics whose unit must be nanoseconds.
  LatencyStats stats_ns() const {
    LatencyStats s = stats();
    if (s.unit != "ns")
      throw_field_error(file_, path_ + ".unit", "expected \"ns\", got \"" + s.unit + "\"");
    return s;
  }

  [[noreturn]] void fail(const std::string& what) const { throw_field_error(file_, path_, what); }

 private:
  std::string child(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  std::string brief() const {
    std::string text = value_.dump();
    return text.size() > 40 ? text.substr(0, 37) + "..." : text;
  }

  const nlohmann::json& value_;
  std::string path_;
  std::string_view file_;
};

}  // namespace megacut::model
