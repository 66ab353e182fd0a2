// Model configs in the Hugging Face config.json form, and where bundled ones are found.
//
// `--model` takes a bundled name (a folder under configs/models), a path to a config.json, or
// a directory holding one (as a Hugging Face checkpoint directory does).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace megacut::model {

struct RopeScaling {
  std::string type = "default";  // "default" or "llama3"
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position = 8192;
};

// A decoder-only transformer (model_type "llama" or "qwen3").
struct DecoderConfig {
  std::string architecture;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t intermediate_size = 0;
  int64_t vocab_size = 0;
  int64_t max_position = 0;
  double rms_norm_eps = 1e-5;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool qk_norm = false;  // Qwen3 normalizes each query and key head before RoPE
};

struct ModelSpec {
  std::string name;  // the bundled name, or the config's parent folder name
  std::filesystem::path config_path;
  nlohmann::json config;  // as read, for tools that need fields the IR does not keep
  DecoderConfig decoder;
};

// The folder of bundled configs: $MEGACUT_CONFIGS if set, else the source tree's configs/.
std::filesystem::path configs_dir();
std::vector<std::string> bundled_models();

ModelSpec load_model(std::string_view name_or_path);
// Parses a config already read; `file` names it in error messages.
DecoderConfig parse_decoder_config(const nlohmann::json& config, std::string_view file);
// Reads and parses a JSON file, with errors naming the file and the position.
nlohmann::json read_json_file(const std::filesystem::path& path);

}  // namespace megacut::model
