// Model configs in the Hugging Face config.json form, and where bundled ones are found.
//
// `--model` takes a bundled name (a folder under configs/models), a path to a config.json, or
// a directory holding one (as a Hugging Face checkpoint directory does).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
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

// The code predictor of a Qwen3-TTS talker: a small decoder that predicts codebooks 2..G of a
// frame one step each, with one embedding table and one head per step.
struct CodePredictorConfig {
  DecoderConfig decoder;    // vocab_size: entries per codebook
  int64_t code_groups = 0;  // codebooks per frame; steps = code_groups - 1
  int64_t steps() const { return code_groups - 1; }
};

// The decoder of a Qwen3-TTS speech tokenizer: codebook sum, a causal pre-convolution, a
// sliding-window transformer between two projections, transposed-convolution upsampling with
// ConvNeXt blocks, then a SnakeBeta convolutional decoder whose channels halve per stage.
struct CodecDecoderConfig {
  int64_t codebooks = 0;
  int64_t codebook_size = 0;
  int64_t codebook_dim = 0;
  int64_t latent_dim = 0;
  int64_t decoder_dim = 0;
  DecoderConfig transformer;  // vocab_size unused
  int64_t sliding_window = 0;
  std::vector<int64_t> upsampling_ratios;  // before the transformer's output reaches decoder_dim
  std::vector<int64_t> upsample_rates;     // the SnakeBeta decoder's stages
};

// A HiFi-GAN (V1-shaped) vocoder from acoustic frames to samples.
struct VocoderConfig {
  int64_t in_dim = 0;
  int64_t initial_channels = 0;
  std::vector<int64_t> upsample_rates;
  std::vector<int64_t> upsample_kernels;
  std::vector<int64_t> resblock_kernels;
  std::vector<std::vector<int64_t>> resblock_dilations;  // one list per resblock kernel
  double leaky_relu_slope = 0.1;
};

// A streaming TTS pipeline: a talker (ModelSpec::decoder) that reads the text prompt and emits
// one frame per decode step, then either a code predictor and a codec decoder (Qwen3-TTS) or a
// vocoder (llama-hifigan-tts) that turn frames into samples.
struct TtsConfig {
  std::string model_type;  // "qwen3_tts" or "llama_hifigan_tts"
  int64_t text_vocab_size = 0;
  int64_t text_hidden_size = 0;  // Qwen3-TTS: text embeddings are projected to the talker's
  int64_t frame_dim = 0;         // llama-hifigan-tts: channels of one acoustic frame
  std::optional<CodePredictorConfig> code_predictor;
  std::optional<CodecDecoderConfig> codec;
  std::optional<VocoderConfig> vocoder;
  int64_t samples_per_frame = 0;
  int64_t sample_rate = 0;
};

// The largest sizes a config may give: far above any model megacut is for, and low enough that
// a stage graph and the sizes computed from it (tiles, bytes) stay small and inside 64-bit
// integers. Every positive integer of a config is at most kMaxConfigSize (a hidden size of 2^20
// builds a graph of 1.3 TB of weights in seconds); a layer count, which multiplies the graph's
// ops, at most kMaxLayers; a context length (max_position_embeddings), which sizes nothing until
// a scenario asks for that many positions, at most kMaxPositions.
inline constexpr int64_t kMaxConfigSize = int64_t{1} << 20;
inline constexpr int64_t kMaxLayers = 1024;
inline constexpr int64_t kMaxPositions = int64_t{1} << 30;

struct ModelSpec {
  std::string name;  // the bundled name, or the config's parent folder name
  std::filesystem::path config_path;
  nlohmann::json config;  // as read, for tools that need fields the IR does not keep
  DecoderConfig decoder;  // the LLM, or a TTS pipeline's talker
  std::optional<TtsConfig> tts;
};

// The folder of bundled configs: $MEGACUT_CONFIGS if set, else the source tree's configs/.
std::filesystem::path configs_dir();
std::vector<std::string> bundled_models();

ModelSpec load_model(std::string_view name_or_path);
// The model a config already read describes (a decoder-only LLM, or a TTS pipeline by its
// model_type); `file` names it in error messages.
ModelSpec parse_model(const nlohmann::json& config, std::string name, std::filesystem::path file);
// Parses a decoder's fields; `file` names it in error messages and `prefix` the object within
// it ("talker_config."). A non-empty `architecture` ("llama" or "qwen3") stands in for the
// config's model_type (a TTS talker's own model_type names the pipeline).
DecoderConfig parse_decoder_config(const nlohmann::json& config, std::string_view file,
                                   std::string_view architecture = {},
                                   std::string_view prefix = {});
// Reads and parses a JSON file, with errors naming the file and the position.
nlohmann::json read_json_file(const std::filesystem::path& path);

}  // namespace megacut::model
