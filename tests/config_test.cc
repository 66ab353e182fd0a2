// Bad model configs give an error naming the file and the field, never a crash.
#include "model/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "model/batch_list.h"
#include "model/decoder.h"
#include "model/error.h"
#include "model/scenario.h"
#include "tests/support/error_of.h"

namespace megacut::model {
namespace {

namespace fs = std::filesystem;

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("megacut-config-test-" +
            std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    base_ = read_json_file(configs_dir() / "models" / "tiny-llama" / "config.json");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes `text` as config.json and returns the error message load_model gives.
  std::string error_for(const std::string& text) {
    std::ofstream(dir_ / "config.json") << text;
    try {
      load_model(dir_.string());
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  std::string error_with(const std::string& field, const nlohmann::json& value) {
    nlohmann::json j = base_;
    if (value.is_discarded()) {
      j.erase(field);
    } else {
      j[field] = value;
    }
    return error_for(j.dump());
  }

  fs::path dir_;
  nlohmann::json base_;
};

TEST_F(ConfigTest, LoadsFromDirectoryLikeACheckpoint) {
  std::ofstream(dir_ / "config.json") << base_.dump();
  const ModelSpec spec = load_model(dir_.string());
  EXPECT_EQ(spec.decoder.hidden_size, 64);
  EXPECT_EQ(spec.config_path, dir_ / "config.json");
  EXPECT_EQ(load_model((dir_ / "config.json").string()).decoder.num_layers, 2);
}

TEST_F(ConfigTest, MalformedJson) {
  const std::string e = error_for("{\"hidden_size\": 64,");
  EXPECT_NE(e.find("config.json: not valid JSON"), std::string::npos) << e;
}

// Every JSON file megacut reads (configs, profiles, plans, validations) says how it is not JSON:
// empty, cut short, bad at a byte, or not a file at all.
TEST_F(ConfigTest, UnreadableJsonSaysHow) {
  using megacut::testing::error_of;
  const fs::path file = dir_ / "profile.json";
  const auto error_for_text = [&](const std::string& text) {
    std::ofstream(file) << text;
    return error_of([&] { read_json_file(file); });
  };
  const std::string name = file.string();
  EXPECT_EQ(error_for_text(""), name + ": not valid JSON (the file is empty)");
  EXPECT_EQ(error_for_text("{\"batches\": [1, 2"),
            name + ": not valid JSON (it ends, after 17 bytes, inside a value: truncated?)");
  EXPECT_EQ(error_for_text("{\"batches\": [1, 2]}}"), name + ": not valid JSON (byte 20)");
  EXPECT_EQ(error_for_text("{\"batches\": [1, 2]}"), "");
  // A key twice in one object (the parser would keep the last), at any depth; the same key in
  // two objects is fine.
  EXPECT_EQ(error_for_text("{\"decode\": \"mk\", \"prefill\": \"conv\", \"decode\": \"conv\"}"),
            name + ": key 'decode' appears twice in one object");
  EXPECT_EQ(error_for_text("{\"a\": {\"b\": 1, \"b\": 2}}"),
            name + ": key 'b' appears twice in one object");
  EXPECT_EQ(error_for_text("{\"a\": {\"b\": 1}, \"c\": [{\"b\": 2}, {\"b\": 3}]}"), "");
  // A number no double holds.
  const std::string huge = error_for_text("{\"ns\": 1e400}");
  EXPECT_EQ(huge.rfind(name + ": not valid JSON (", 0), 0u) << huge;
  EXPECT_EQ(error_of([&] { read_json_file(dir_); }), dir_.string() + ": a directory, not a file");
  EXPECT_EQ(error_of([&] { read_json_file(dir_ / "nope.json"); }),
            (dir_ / "nope.json").string() + ": cannot open file");
}

TEST_F(ConfigTest, MissingField) {
  const std::string e = error_with("hidden_size", nlohmann::json::value_t::discarded);
  EXPECT_NE(e.find("field 'hidden_size': missing"), std::string::npos) << e;
  EXPECT_NE(e.find("config.json"), std::string::npos) << e;
}

TEST_F(ConfigTest, MistypedField) {
  const std::string e = error_with("num_hidden_layers", "sixteen");
  EXPECT_NE(e.find("field 'num_hidden_layers': expected a positive integer, got \"sixteen\""),
            std::string::npos)
      << e;
}

TEST_F(ConfigTest, NegativeSize) {
  const std::string e = error_with("intermediate_size", -3);
  EXPECT_NE(e.find("field 'intermediate_size'"), std::string::npos) << e;
  EXPECT_NE(e.find("-3"), std::string::npos) << e;
}

// Sizes past what megacut models are refused on read, naming the field, before any graph is
// built from them (a million layers or a hidden size of 10^10 once ran for minutes into
// std::bad_alloc).
TEST_F(ConfigTest, SizesBeyondWhatIsModelledAreRefused) {
  EXPECT_EQ(error_with("num_hidden_layers", kMaxLayers + 1),
            (dir_ / "config.json").string() +
                ": field 'num_hidden_layers': " + std::to_string(kMaxLayers + 1) +
                " is more than megacut models (at most " + std::to_string(kMaxLayers) + ")");
  for (const char* field : {"hidden_size", "intermediate_size", "vocab_size"}) {
    for (const nlohmann::json value : {nlohmann::json(kMaxConfigSize + 1),
                                       nlohmann::json(std::numeric_limits<int64_t>::max())}) {
      const std::string e = error_with(field, value);
      EXPECT_NE(e.find(std::string("field '") + field + "': " + value.dump() +
                       " is more than megacut models"),
                std::string::npos)
          << e;
    }
  }
  EXPECT_NE(error_with("max_position_embeddings", kMaxPositions + 1).find("at most 1073741824"),
            std::string::npos);
  EXPECT_EQ(error_with("max_position_embeddings", kMaxPositions), "");
  EXPECT_EQ(error_with("num_hidden_layers", kMaxLayers), "");
}

TEST_F(ConfigTest, UnknownArchitecture) {
  const std::string e = error_with("model_type", "mamba");
  EXPECT_NE(e.find("field 'model_type': 'mamba' is not supported"), std::string::npos) << e;
}

TEST_F(ConfigTest, HeadsMustGroup) {
  const std::string e = error_with("num_key_value_heads", 3);
  EXPECT_NE(e.find("field 'num_key_value_heads'"), std::string::npos) << e;
}

TEST_F(ConfigTest, BadRopeScaling) {
  nlohmann::json j = base_;
  j["rope_scaling"]["rope_type"] = "yarn";
  const std::string e = error_for(j.dump());
  EXPECT_NE(e.find("rope_scaling.rope_type"), std::string::npos) << e;
}

TEST_F(ConfigTest, TopLevelNotAnObject) {
  EXPECT_NE(error_for("[1, 2]").find("expected a JSON object"), std::string::npos);
}

TEST_F(ConfigTest, UnknownModelNameListsBundledOnes) {
  try {
    load_model("llama-9000");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("llama-3.2-1b"), std::string::npos) << e.what();
  }
}

TEST_F(ConfigTest, BundledConfigsAllLoad) {
  const auto names = bundled_models();
  EXPECT_GE(names.size(), 4u);
  for (const std::string& name : names) EXPECT_NO_THROW(load_model(name)) << name;
}

TEST_F(ConfigTest, ScenarioRejectsBadSizes) {
  const ModelSpec spec = load_model("tiny-llama");
  EXPECT_THROW(make_scenario(spec, 0, 128), Error);
  EXPECT_THROW(make_scenario(spec, 1, -5), Error);
  EXPECT_THROW(make_scenario(spec, 1, 1024), Error);  // no room for a decoded token
  EXPECT_THROW(build_graph(spec, make_scenario(spec, 1, 8), "verify"), Error);
}

// Sizes that would wrap 64-bit arithmetic, here or in the tensor sizes computed from them, are
// refused with the flag named: a prompt near 2^63, a chunk of more frames than megacut models,
// more tokens (batch times positions) than kMaxTokens, even where a config's
// max_position_embeddings would allow them.
TEST_F(ConfigTest, ScenarioRefusesSizesThatWouldOverflow) {
  using megacut::testing::error_of;
  const ModelSpec llama = load_model("tiny-llama");
  const std::string config = llama.config_path.string();
  EXPECT_EQ(error_of([&] { make_scenario(llama, 1, 1023); }), "");
  EXPECT_EQ(error_of([&] { make_scenario(llama, 1, std::numeric_limits<int64_t>::max()); }),
            "--prompt-len: 9223372036854775807 plus 1 decoded token exceeds " + config +
                " max_position_embeddings 1024");
  EXPECT_EQ(error_of([&] { make_scenario(llama, kMaxBatch + 1, 8); }),
            "--batch: 65537 is larger than the largest batch megacut models (65536)");
  const ModelSpec tts = load_model("tiny-qwen3-tts");
  EXPECT_EQ(error_of([&] { make_scenario(tts, 1, 8, kMaxFrames + 1); }),
            "--frames: 4097 is more than the largest chunk megacut models (4096 frames)");

  nlohmann::json j = base_;
  j["max_position_embeddings"] = kMaxPositions;
  std::ofstream(dir_ / "config.json") << j.dump();
  const ModelSpec long_context = load_model(dir_.string());
  // 2^24 tokens: 2^16 sequences of 255 prompt positions and one decoded.
  EXPECT_EQ(error_of([&] { make_scenario(long_context, kMaxBatch, 255); }), "");
  EXPECT_EQ(error_of([&] { make_scenario(long_context, kMaxBatch, 256); }),
            "--batch: 65536 sequences of 257 positions (prompt and decoded) are more tokens than "
            "megacut models (16777216)");
  EXPECT_EQ(error_of([&] { make_scenario(long_context, 2, kMaxPositions - 1); }),
            "--batch: 2 sequences of 1073741824 positions (prompt and decoded) are more tokens "
            "than megacut models (16777216)");
  EXPECT_EQ(error_of([&] { make_scenario(long_context, 1, std::numeric_limits<int64_t>::max()); }),
            "--prompt-len: 9223372036854775807 plus 1 decoded token exceeds " +
                (dir_ / "config.json").string() + " max_position_embeddings 1073741824");
}

}  // namespace
}  // namespace megacut::model
