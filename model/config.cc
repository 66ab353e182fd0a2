#include "model/config.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "model/error.h"

namespace megacut::model {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Reads fields of one JSON object, naming the file and field in every error.
class FieldReader {
 public:
  FieldReader(const json& object, std::string_view file) : object_(object), file_(file) {
    if (!object_.is_object()) throw_field_error(file_, "(top level)", "expected a JSON object");
  }

  bool has(std::string_view field) const {
    return object_.contains(field) && !object_.at(std::string(field)).is_null();
  }

  int64_t positive_int(std::string_view field) const {
    const json& value = require(field);
    if (!value.is_number_integer() || value.get<int64_t>() <= 0) {
      throw_field_error(file_, field, "expected a positive integer, got " + value.dump());
    }
    return value.get<int64_t>();
  }

  int64_t positive_int_or(std::string_view field, int64_t fallback) const {
    return has(field) ? positive_int(field) : fallback;
  }

  double positive_number_or(std::string_view field, double fallback) const {
    if (!has(field)) return fallback;
    const json& value = object_.at(std::string(field));
    if (!value.is_number() || value.get<double>() <= 0) {
      throw_field_error(file_, field, "expected a positive number, got " + value.dump());
    }
    return value.get<double>();
  }

  bool boolean_or(std::string_view field, bool fallback) const {
    if (!has(field)) return fallback;
    const json& value = object_.at(std::string(field));
    if (!value.is_boolean()) {
      throw_field_error(file_, field, "expected true or false, got " + value.dump());
    }
    return value.get<bool>();
  }

  std::string string(std::string_view field) const {
    const json& value = require(field);
    if (!value.is_string())
      throw_field_error(file_, field, "expected a string, got " + value.dump());
    return value.get<std::string>();
  }

  std::string string_or(std::string_view field, std::string fallback) const {
    return has(field) ? string(field) : fallback;
  }

 private:
  const json& require(std::string_view field) const {
    if (!has(field)) throw_field_error(file_, field, "missing");
    return object_.at(std::string(field));
  }

  const json& object_;
  std::string file_;
};

RopeScaling parse_rope_scaling(const json& config, std::string_view file) {
  RopeScaling scaling;
  if (!config.contains("rope_scaling") || config.at("rope_scaling").is_null()) return scaling;
  const std::string where = std::string(file) + " (rope_scaling)";
  const FieldReader r(config.at("rope_scaling"), where);
  scaling.type = r.has("rope_type") ? r.string("rope_type") : r.string_or("type", "default");
  if (scaling.type == "default") return scaling;
  if (scaling.type != "llama3") {
    throw_field_error(file, "rope_scaling.rope_type",
                      "'" + scaling.type + "' is not supported (supported: default, llama3)");
  }
  scaling.factor = r.positive_number_or("factor", 1.0);
  scaling.low_freq_factor = r.positive_number_or("low_freq_factor", 1.0);
  scaling.high_freq_factor = r.positive_number_or("high_freq_factor", 4.0);
  scaling.original_max_position = r.positive_int_or("original_max_position_embeddings", 8192);
  if (scaling.high_freq_factor <= scaling.low_freq_factor) {
    throw_field_error(file, "rope_scaling.high_freq_factor", "must exceed low_freq_factor");
  }
  return scaling;
}

}  // namespace

fs::path configs_dir() {
  if (const char* env = std::getenv("MEGACUT_CONFIGS"); env != nullptr && *env != '\0') {
    return fs::path(env);
  }
  return fs::path(MEGACUT_SOURCE_CONFIGS);
}

std::vector<std::string> bundled_models() {
  std::vector<std::string> names;
  const fs::path dir = configs_dir() / "models";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (fs::exists(entry.path() / "config.json")) names.push_back(entry.path().filename());
  }
  std::sort(names.begin(), names.end());
  return names;
}

json read_json_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw Error(path.string() + ": cannot open file");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return json::parse(text.str());
  } catch (const json::parse_error& e) {
    throw Error(path.string() + ": not valid JSON (byte " + std::to_string(e.byte) + ")");
  }
}

DecoderConfig parse_decoder_config(const json& config, std::string_view file) {
  const FieldReader r(config, file);
  DecoderConfig c;
  c.architecture = r.string("model_type");
  if (c.architecture != "llama" && c.architecture != "qwen3") {
    throw_field_error(file, "model_type",
                      "'" + c.architecture + "' is not supported (supported: llama, qwen3)");
  }
  if (r.string_or("hidden_act", "silu") != "silu") {
    throw_field_error(file, "hidden_act",
                      "'" + r.string("hidden_act") + "' is not supported (silu)");
  }
  if (r.boolean_or("attention_bias", false)) {
    throw_field_error(file, "attention_bias", "attention biases are not supported");
  }
  c.hidden_size = r.positive_int("hidden_size");
  c.num_layers = r.positive_int("num_hidden_layers");
  c.num_heads = r.positive_int("num_attention_heads");
  c.num_kv_heads = r.positive_int_or("num_key_value_heads", c.num_heads);
  if (c.num_heads % c.num_kv_heads != 0) {
    throw_field_error(file, "num_key_value_heads",
                      std::to_string(c.num_kv_heads) + " does not divide num_attention_heads " +
                          std::to_string(c.num_heads));
  }
  if (!r.has("head_dim") && c.hidden_size % c.num_heads != 0) {
    throw_field_error(file, "head_dim",
                      "missing, and hidden_size is not a multiple of num_attention_heads");
  }
  c.head_dim = r.positive_int_or("head_dim", c.hidden_size / c.num_heads);
  if (c.head_dim % 2 != 0) {
    throw_field_error(file, "head_dim",
                      "must be even for rotary embeddings, got " + std::to_string(c.head_dim));
  }
  c.intermediate_size = r.positive_int("intermediate_size");
  c.vocab_size = r.positive_int("vocab_size");
  c.max_position = r.positive_int_or("max_position_embeddings", 4096);
  c.rms_norm_eps = r.positive_number_or("rms_norm_eps", 1e-6);
  c.rope_theta = r.positive_number_or("rope_theta", 10000.0);
  c.rope_scaling = parse_rope_scaling(config, file);
  c.tie_word_embeddings = r.boolean_or("tie_word_embeddings", false);
  c.qk_norm = c.architecture == "qwen3";
  return c;
}

ModelSpec load_model(std::string_view name_or_path) {
  if (name_or_path.empty()) throw Error("--model: empty model name");
  fs::path path(name_or_path);
  std::string name;
  const fs::path bundled = configs_dir() / "models" / path / "config.json";
  if (!fs::exists(path) && path.is_relative() && fs::exists(bundled)) {
    name = std::string(name_or_path);
    path = bundled;
  } else if (fs::is_directory(path)) {
    path /= "config.json";
    name = fs::absolute(path).parent_path().filename();
  } else if (fs::exists(path)) {
    name = fs::absolute(path).parent_path().filename();
  } else {
    std::string known;
    for (const auto& m : bundled_models()) known += (known.empty() ? "" : ", ") + m;
    throw Error("--model: '" + std::string(name_or_path) +
                "' is neither a bundled model nor a path (bundled: " + known + ")");
  }
  if (!fs::exists(path)) throw Error(path.string() + ": no config.json in this directory");
  ModelSpec spec;
  spec.name = name;
  spec.config_path = path;
  spec.config = read_json_file(path);
  spec.decoder = parse_decoder_config(spec.config, path.string());
  return spec;
}

}  // namespace megacut::model
