#include "model/config.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "model/error.h"

namespace megacut::model {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Reads fields of one JSON object, naming the file and field in every error.
class FieldReader {
 public:
  // `prefix` names the object within the file in errors, e.g. "vocoder_config.".
  FieldReader(const json& object, std::string_view file, std::string prefix = "")
      : object_(object), file_(file), prefix_(std::move(prefix)) {
    if (!object_.is_object()) {
      throw_field_error(file_,
                        prefix_.empty() ? "(top level)" : prefix_.substr(0, prefix_.size() - 1),
                        "expected a JSON object");
    }
  }

  bool has(std::string_view field) const {
    return object_.contains(field) && !object_.at(std::string(field)).is_null();
  }

  int64_t positive_int(std::string_view field, int64_t most = kMaxConfigSize) const {
    const json& value = require(field);
    if (!value.is_number_integer() || value.get<int64_t>() <= 0) {
      throw_field_error(file_, name(field), "expected a positive integer, got " + value.dump());
    }
    if (value.get<int64_t>() > most) {
      throw_field_error(
          file_, name(field),
          value.dump() + " is more than megacut models (at most " + std::to_string(most) + ")");
    }
    return value.get<int64_t>();
  }

  int64_t positive_int_or(std::string_view field, int64_t fallback,
                          int64_t most = kMaxConfigSize) const {
    return has(field) ? positive_int(field, most) : fallback;
  }

  double positive_number_or(std::string_view field, double fallback) const {
    if (!has(field)) return fallback;
    const json& value = object_.at(std::string(field));
    if (!value.is_number() || value.get<double>() <= 0) {
      throw_field_error(file_, name(field), "expected a positive number, got " + value.dump());
    }
    return value.get<double>();
  }

  bool boolean_or(std::string_view field, bool fallback) const {
    if (!has(field)) return fallback;
    const json& value = object_.at(std::string(field));
    if (!value.is_boolean()) {
      throw_field_error(file_, name(field), "expected true or false, got " + value.dump());
    }
    return value.get<bool>();
  }

  std::string string(std::string_view field) const {
    const json& value = require(field);
    if (!value.is_string())
      throw_field_error(file_, name(field), "expected a string, got " + value.dump());
    return value.get<std::string>();
  }

  std::string string_or(std::string_view field, std::string fallback) const {
    return has(field) ? string(field) : fallback;
  }

  std::vector<int64_t> positive_ints(std::string_view field) const {
    return positive_int_list(require(field), field);
  }

  // A list of non-empty lists of positive integers, e.g. HiFi-GAN's resblock dilations.
  std::vector<std::vector<int64_t>> positive_int_lists(std::string_view field) const {
    const json& value = require(field);
    if (!value.is_array() || value.empty()) {
      throw_field_error(file_, name(field),
                        "expected a non-empty list of lists, got " + value.dump());
    }
    std::vector<std::vector<int64_t>> lists;
    for (size_t i = 0; i < value.size(); ++i) {
      lists.push_back(
          positive_int_list(value[i], std::string(field) + "[" + std::to_string(i) + "]"));
    }
    return lists;
  }

  const json& object(std::string_view field) const {
    const json& value = require(field);
    if (!value.is_object()) {
      throw_field_error(file_, name(field), "expected a JSON object, got " + value.dump());
    }
    return value;
  }

 private:
  std::vector<int64_t> positive_int_list(const json& value, std::string_view field) const {
    if (!value.is_array() || value.empty()) {
      throw_field_error(file_, name(field),
                        "expected a non-empty list of positive integers, got " + value.dump());
    }
    std::vector<int64_t> ints;
    for (const json& v : value) {
      if (!v.is_number_integer() || v.get<int64_t>() <= 0) {
        throw_field_error(file_, name(field), "expected positive integers, got " + value.dump());
      }
      if (v.get<int64_t>() > kMaxConfigSize) {
        throw_field_error(file_, name(field),
                          v.dump() + " is more than megacut models (at most " +
                              std::to_string(kMaxConfigSize) + ")");
      }
      ints.push_back(v.get<int64_t>());
    }
    return ints;
  }

  const json& require(std::string_view field) const {
    if (!has(field)) throw_field_error(file_, name(field), "missing");
    return object_.at(std::string(field));
  }

  std::string name(std::string_view field) const { return prefix_ + std::string(field); }

  const json& object_;
  std::string file_;
  std::string prefix_;
};

RopeScaling parse_rope_scaling(const json& config, std::string_view file,
                               const std::string& prefix) {
  RopeScaling scaling;
  if (!config.contains("rope_scaling") || config.at("rope_scaling").is_null()) return scaling;
  const FieldReader r(config.at("rope_scaling"), file, prefix + "rope_scaling.");
  scaling.type = r.has("rope_type") ? r.string("rope_type") : r.string_or("type", "default");
  if (scaling.type == "default") return scaling;
  if (scaling.type != "llama3") {
    throw_field_error(file, prefix + "rope_scaling.rope_type",
                      "'" + scaling.type + "' is not supported (supported: default, llama3)");
  }
  scaling.factor = r.positive_number_or("factor", 1.0);
  scaling.low_freq_factor = r.positive_number_or("low_freq_factor", 1.0);
  scaling.high_freq_factor = r.positive_number_or("high_freq_factor", 4.0);
  scaling.original_max_position =
      r.positive_int_or("original_max_position_embeddings", 8192, kMaxPositions);
  if (scaling.high_freq_factor <= scaling.low_freq_factor) {
    throw_field_error(file, prefix + "rope_scaling.high_freq_factor",
                      "must exceed low_freq_factor");
  }
  return scaling;
}

int64_t product(const std::vector<int64_t>& values) {
  int64_t p = 1;
  for (int64_t v : values) p *= v;
  return p;
}

// A field of a nested object named in errors as "outer.field".
[[noreturn]] void throw_nested_error(std::string_view file, std::string_view outer,
                                     std::string_view field, const std::string& what) {
  throw_field_error(file, std::string(outer) + "." + std::string(field), what);
}

CodecDecoderConfig parse_codec_decoder(const json& tokenizer, std::string_view file,
                                       int64_t code_groups) {
  const std::string outer = "speech_tokenizer_config.decoder_config";
  const FieldReader top(tokenizer, file, "speech_tokenizer_config.");
  const FieldReader r(top.object("decoder_config"), file, outer + ".");
  CodecDecoderConfig c;
  c.codebooks = r.positive_int("num_quantizers");
  if (c.codebooks != code_groups) {
    throw_nested_error(file, outer, "num_quantizers",
                       std::to_string(c.codebooks) +
                           " differs from talker_config.num_code_groups " +
                           std::to_string(code_groups));
  }
  c.codebook_size = r.positive_int("codebook_size");
  c.codebook_dim = r.positive_int("codebook_dim");
  c.latent_dim = r.positive_int("latent_dim");
  c.decoder_dim = r.positive_int("decoder_dim");
  c.sliding_window = r.positive_int("sliding_window");
  c.upsampling_ratios = r.positive_ints("upsampling_ratios");
  c.upsample_rates = r.positive_ints("upsample_rates");
  if (c.decoder_dim % (int64_t{1} << c.upsample_rates.size()) != 0) {
    throw_nested_error(file, outer, "decoder_dim",
                       std::to_string(c.decoder_dim) + " cannot halve once per upsample rate (" +
                           std::to_string(c.upsample_rates.size()) + " rates)");
  }
  DecoderConfig& t = c.transformer;
  t.architecture = "qwen3";
  t.hidden_size = r.positive_int("hidden_size");
  t.num_layers = r.positive_int("num_hidden_layers", kMaxLayers);
  t.num_heads = r.positive_int("num_attention_heads");
  t.num_kv_heads = r.positive_int_or("num_key_value_heads", t.num_heads);
  t.head_dim = r.positive_int_or("head_dim", t.hidden_size / t.num_heads);
  if (t.num_heads % t.num_kv_heads != 0 || t.head_dim % 2 != 0) {
    throw_nested_error(file, outer, "num_key_value_heads",
                       "heads " + std::to_string(t.num_heads) + ", kv heads " +
                           std::to_string(t.num_kv_heads) + ", head_dim " +
                           std::to_string(t.head_dim) +
                           ": kv heads must divide heads and head_dim be even");
  }
  t.intermediate_size = r.positive_int("intermediate_size");
  t.max_position = r.positive_int_or("max_position_embeddings", 8000, kMaxPositions);
  t.rms_norm_eps = r.positive_number_or("rms_norm_eps", 1e-5);
  t.rope_theta = r.positive_number_or("rope_theta", 10000.0);
  t.qk_norm = false;
  return c;
}

VocoderConfig parse_vocoder(const json& config, std::string_view file, int64_t frame_dim) {
  const std::string outer = "vocoder_config";
  const FieldReader r(config, file, outer + ".");
  if (const std::string type = r.string_or("model_type", "hifigan"); type != "hifigan") {
    throw_nested_error(file, outer, "model_type",
                       "'" + type + "' is not supported (supported: hifigan)");
  }
  VocoderConfig v;
  v.in_dim = r.positive_int("model_in_dim");
  if (v.in_dim != frame_dim) {
    throw_nested_error(file, outer, "model_in_dim",
                       std::to_string(v.in_dim) + " differs from talker_config.frame_dim " +
                           std::to_string(frame_dim));
  }
  v.initial_channels = r.positive_int("upsample_initial_channel");
  v.upsample_rates = r.positive_ints("upsample_rates");
  v.upsample_kernels = r.positive_ints("upsample_kernel_sizes");
  if (v.upsample_kernels.size() != v.upsample_rates.size()) {
    throw_nested_error(file, outer, "upsample_kernel_sizes",
                       "has " + std::to_string(v.upsample_kernels.size()) +
                           " entries, upsample_rates " + std::to_string(v.upsample_rates.size()));
  }
  for (size_t i = 0; i < v.upsample_rates.size(); ++i) {
    if (v.upsample_kernels[i] < v.upsample_rates[i]) {
      throw_nested_error(file, outer, "upsample_kernel_sizes",
                         "kernel " + std::to_string(v.upsample_kernels[i]) +
                             " is shorter than its rate " + std::to_string(v.upsample_rates[i]));
    }
  }
  if (v.initial_channels % (int64_t{1} << v.upsample_rates.size()) != 0) {
    throw_nested_error(file, outer, "upsample_initial_channel",
                       std::to_string(v.initial_channels) + " cannot halve once per upsample rate");
  }
  v.resblock_kernels = r.positive_ints("resblock_kernel_sizes");
  v.resblock_dilations = r.positive_int_lists("resblock_dilation_sizes");
  if (v.resblock_dilations.size() != v.resblock_kernels.size()) {
    throw_nested_error(file, outer, "resblock_dilation_sizes",
                       "has " + std::to_string(v.resblock_dilations.size()) +
                           " lists, resblock_kernel_sizes " +
                           std::to_string(v.resblock_kernels.size()) + " kernels");
  }
  for (int64_t k : v.resblock_kernels) {
    if (k % 2 == 0) {
      throw_nested_error(file, outer, "resblock_kernel_sizes",
                         "kernel " + std::to_string(k) + " is even; centred convolutions need odd");
    }
  }
  v.leaky_relu_slope = r.positive_number_or("leaky_relu_slope", 0.1);
  return v;
}

TtsConfig parse_tts(const json& config, std::string_view file, DecoderConfig& talker) {
  const FieldReader r(config, file);
  TtsConfig t;
  t.model_type = r.string("model_type");
  const json& talker_json = r.object("talker_config");
  const FieldReader tr(talker_json, file, "talker_config.");
  const bool qwen = t.model_type == "qwen3_tts";
  talker = parse_decoder_config(talker_json, file, qwen ? "qwen3" : "llama", "talker_config.");
  if (qwen) {
    t.text_vocab_size = tr.positive_int("text_vocab_size");
    t.text_hidden_size = tr.positive_int("text_hidden_size");
    CodePredictorConfig cp;
    const json& cp_json = tr.object("code_predictor_config");
    cp.decoder =
        parse_decoder_config(cp_json, file, "qwen3", "talker_config.code_predictor_config.");
    cp.code_groups = FieldReader(cp_json, file, "talker_config.code_predictor_config.")
                         .positive_int_or("num_code_groups", tr.positive_int("num_code_groups"));
    if (cp.code_groups < 2) {
      throw_field_error(file, "talker_config.code_predictor_config.num_code_groups",
                        "must be at least 2, got " + std::to_string(cp.code_groups));
    }
    if (cp.decoder.hidden_size != talker.hidden_size) {
      throw_field_error(file, "talker_config.code_predictor_config.hidden_size",
                        std::to_string(cp.decoder.hidden_size) +
                            " differs from the talker's hidden_size " +
                            std::to_string(talker.hidden_size) + " (no projection is modelled)");
    }
    const json& tokenizer = r.object("speech_tokenizer_config");
    CodecDecoderConfig codec = parse_codec_decoder(tokenizer, file, cp.code_groups);
    if (codec.codebook_size != cp.decoder.vocab_size) {
      throw_field_error(file, "speech_tokenizer_config.decoder_config.codebook_size",
                        std::to_string(codec.codebook_size) +
                            " differs from the code predictor's vocab_size " +
                            std::to_string(cp.decoder.vocab_size));
    }
    const FieldReader tok(tokenizer, file, "speech_tokenizer_config.");
    t.sample_rate = tok.positive_int("output_sample_rate");
    t.samples_per_frame = product(codec.upsampling_ratios) * product(codec.upsample_rates);
    if (tok.has("decode_upsample_rate") &&
        tok.positive_int("decode_upsample_rate") != t.samples_per_frame) {
      throw_field_error(file, "speech_tokenizer_config.decode_upsample_rate",
                        std::to_string(tok.positive_int("decode_upsample_rate")) +
                            " differs from the product of upsampling_ratios and upsample_rates, " +
                            std::to_string(t.samples_per_frame));
    }
    t.code_predictor = std::move(cp);
    t.codec = std::move(codec);
  } else {
    t.frame_dim = tr.positive_int("frame_dim");
    t.vocoder = parse_vocoder(r.object("vocoder_config"), file, t.frame_dim);
    t.sample_rate = FieldReader(r.object("vocoder_config"), file, "vocoder_config.")
                        .positive_int("sampling_rate");
    t.samples_per_frame = product(t.vocoder->upsample_rates);
  }
  return t;
}

}  // namespace

ModelSpec parse_model(const json& config, std::string name, fs::path file) {
  ModelSpec spec;
  spec.name = std::move(name);
  spec.config_path = std::move(file);
  spec.config = config;
  const std::string where = spec.config_path.string();
  const FieldReader r(spec.config, where);
  const std::string type = r.string("model_type");
  if (type == "qwen3_tts" || type == "llama_hifigan_tts") {
    spec.tts = parse_tts(spec.config, where, spec.decoder);
  } else {
    spec.decoder = parse_decoder_config(spec.config, where);
  }
  return spec;
}

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
  // A directory opens, and reads as nothing: "not valid JSON" would not say what is wrong.
  std::error_code error;
  if (fs::is_directory(path, error)) throw Error(path.string() + ": a directory, not a file");
  std::ifstream in(path);
  if (!in) throw Error(path.string() + ": cannot open file");
  std::stringstream text;
  text << in.rdbuf();
  const std::string bytes = text.str();
  if (bytes.empty()) throw Error(path.string() + ": not valid JSON (the file is empty)");
  // The parser keeps the last of two equal keys and says nothing (a composition with two
  // "decode" clauses would run one): a key twice in one object is an error.
  std::vector<std::set<std::string>> keys;  // of each open object, outermost first
  const auto reject_duplicates = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) keys.emplace_back();
    if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    if (event == json::parse_event_t::key && !keys.empty() &&
        !keys.back().insert(parsed.get<std::string>()).second) {
      throw Error(path.string() + ": key '" + parsed.get<std::string>() +
                  "' appears twice in one object");
    }
    return true;
  };
  try {
    return json::parse(bytes, reject_duplicates);
  } catch (const json::out_of_range& e) {  // a number beyond a double: 1e400
    throw Error(path.string() + ": not valid JSON (" + e.what() + ")");
  } catch (const json::parse_error& e) {
    // The parser reports the end of input one byte past the last.
    if (e.byte > bytes.size()) {
      throw Error(path.string() + ": not valid JSON (it ends, after " +
                  std::to_string(bytes.size()) + " bytes, inside a value: truncated?)");
    }
    throw Error(path.string() + ": not valid JSON (byte " + std::to_string(e.byte) + ")");
  }
}

DecoderConfig parse_decoder_config(const json& config, std::string_view file,
                                   std::string_view architecture, std::string_view prefix_view) {
  const std::string prefix(prefix_view);
  const FieldReader r(config, file, prefix);
  DecoderConfig c;
  c.architecture = architecture.empty() ? r.string("model_type") : std::string(architecture);
  if (c.architecture != "llama" && c.architecture != "qwen3") {
    throw_field_error(file, prefix + "model_type",
                      "'" + c.architecture +
                          "' is not supported (supported: llama, qwen3, qwen3_tts, "
                          "llama_hifigan_tts)");
  }
  if (r.string_or("hidden_act", "silu") != "silu") {
    throw_field_error(file, prefix + "hidden_act",
                      "'" + r.string("hidden_act") + "' is not supported (silu)");
  }
  if (r.boolean_or("attention_bias", false)) {
    throw_field_error(file, prefix + "attention_bias", "attention biases are not supported");
  }
  c.hidden_size = r.positive_int("hidden_size");
  c.num_layers = r.positive_int("num_hidden_layers", kMaxLayers);
  c.num_heads = r.positive_int("num_attention_heads");
  c.num_kv_heads = r.positive_int_or("num_key_value_heads", c.num_heads);
  if (c.num_heads % c.num_kv_heads != 0) {
    throw_field_error(file, prefix + "num_key_value_heads",
                      std::to_string(c.num_kv_heads) + " does not divide num_attention_heads " +
                          std::to_string(c.num_heads));
  }
  if (!r.has("head_dim") && c.hidden_size % c.num_heads != 0) {
    throw_field_error(file, prefix + "head_dim",
                      "missing, and hidden_size is not a multiple of num_attention_heads");
  }
  c.head_dim = r.positive_int_or("head_dim", c.hidden_size / c.num_heads);
  if (c.head_dim % 2 != 0) {
    throw_field_error(file, prefix + "head_dim",
                      "must be even for rotary embeddings, got " + std::to_string(c.head_dim));
  }
  c.intermediate_size = r.positive_int("intermediate_size");
  c.vocab_size = r.positive_int("vocab_size");
  c.max_position = r.positive_int_or("max_position_embeddings", 4096, kMaxPositions);
  c.rms_norm_eps = r.positive_number_or("rms_norm_eps", 1e-6);
  c.rope_theta = r.positive_number_or("rope_theta", 10000.0);
  c.rope_scaling = parse_rope_scaling(config, file, prefix);
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
  return parse_model(read_json_file(path), name, path);
}

}  // namespace megacut::model
