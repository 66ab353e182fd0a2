// Weights on the host: the safetensors format byte for byte, corrupted files, deterministic random
// weights, checks against a graph, the device arena plan, and checkpoints saved for transformers.
#include "executor/weights.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "executor/bf16.h"
#include "executor/safetensors.h"
#include "model/decoder.h"
#include "model/error.h"
#include "model/scenario.h"
#include "tests/support/error_of.h"

namespace megacut::executor {
namespace {

using megacut::testing::error_of;

namespace fs = std::filesystem;
namespace st = safetensors;

class WeightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("megacut-weights-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& bytes) const {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
    return dir_ / name;
  }

  static std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    return bytes.str();
  }

  fs::path dir_;
};

// The 8-byte little-endian length, the header as given, then the data.
std::string file_bytes(const std::string& header, const std::string& data) {
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return bytes + header + data;
}

// Whether `text` holds every one of `parts`; on failure, the text.
template <typename... Parts>
::testing::AssertionResult contains(const std::string& text, const Parts&... parts) {
  for (std::string_view part : {std::string_view(parts)...}) {
    if (text.find(part) == std::string::npos) {
      return ::testing::AssertionFailure() << "'" << part << "' not in:\n" << text;
    }
  }
  return ::testing::AssertionSuccess();
}

std::span<const std::byte> bytes_of(const std::string& s) { return std::as_bytes(std::span(s)); }

model::ModelSpec tiny(const char* name) { return model::load_model(name); }

model::Graph stage_graph(const model::ModelSpec& spec, const char* stage, int64_t batch = 2) {
  return model::build_graph(spec, model::make_scenario(spec, batch, 8), stage);
}

// ---------------------------------------------------------------------------------------------
// bf16 and fp16 on the host.

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(-2.0f), 0xc000);
  // 1 + 2^-8 lies halfway between 0x3f80 and 0x3f81: ties go to the even one, 0x3f80.
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f), 0x3f80);
  // 1 + 3 * 2^-8 lies halfway between 0x3f81 and 0x3f82: even is 0x3f82.
  EXPECT_EQ(float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds past the top
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::denorm_min()), 0x0000);
  const uint16_t nan = float_to_bf16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(bf16_to_float(nan)));
  EXPECT_TRUE(
      std::isnan(bf16_to_float(float_to_bf16(-std::numeric_limits<float>::signaling_NaN()))));
}

TEST(Bf16, EveryValueRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float f = bf16_to_float(static_cast<uint16_t>(bits));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bf16(f), bits) << std::hex << bits;
  }
  EXPECT_EQ(round_to_bf16(3.14159265f), 3.140625f);
}

TEST(Bf16, HalfToFloatIsExact) {
  EXPECT_EQ(half_to_float(0x3c00), 1.0f);
  EXPECT_EQ(half_to_float(0xc000), -2.0f);
  EXPECT_EQ(half_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(half_to_float(0x0001), 0x1p-24f);  // the smallest subnormal
  EXPECT_EQ(half_to_float(0x03ff), 1023 * 0x1p-24f);
  EXPECT_EQ(half_to_float(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
  EXPECT_TRUE(std::signbit(half_to_float(0x8000)));
}

// ---------------------------------------------------------------------------------------------
// The format, byte for byte.

// The reference implementation's own serialization tests (safetensors/src/tensor.rs): our writer
// must produce exactly its bytes.
TEST_F(WeightsTest, WriterMatchesReferenceImplementationBytes) {
  std::vector<float> values = {0, 1, 2, 3, 4, 5};
  const st::TensorData attn{"attn.0", st::Dtype::F32, {1, 2, 3}, std::as_bytes(std::span(values))};
  st::write_file(dir_ / "a.safetensors", std::span(&attn, 1), {});
  const std::vector<uint8_t> expected = {
      64, 0,  0,   0,   0,   0,   0,   0,   123, 34,  97,  116, 116, 110, 46,  48,
      34, 58, 123, 34,  100, 116, 121, 112, 101, 34,  58,  34,  70,  51,  50,  34,
      44, 34, 115, 104, 97,  112, 101, 34,  58,  91,  49,  44,  50,  44,  51,  93,
      44, 34, 100, 97,  116, 97,  95,  111, 102, 102, 115, 101, 116, 115, 34,  58,
      91, 48, 44,  50,  52,  93,  125, 125, 0,   0,   0,   0,   0,   0,   128, 63,
      0,  0,  0,   64,  0,   0,   64,  64,  0,   0,   128, 64,  0,   0,   160, 64};
  EXPECT_EQ(read(dir_ / "a.safetensors"), std::string(expected.begin(), expected.end()));

  st::write_file(dir_ / "empty.safetensors", {}, {});
  EXPECT_EQ(read(dir_ / "empty.safetensors"), file_bytes("{}      ", ""));
  st::write_file(dir_ / "meta.safetensors", {}, {{"framework", "pt"}});
  EXPECT_EQ(read(dir_ / "meta.safetensors"),
            file_bytes("{\"__metadata__\":{\"framework\":\"pt\"}}     ", ""));
}

// Tensors sorted by descending dtype alignment (F32, I32, BF16) then name, "__metadata__" first,
// the header padded with spaces to a multiple of 8, the data in header order.
TEST_F(WeightsTest, HandBuiltFileByteForByte) {
  const std::string b_data("\x80\x3f\x00\xc0", 4);  // bf16 1, -2
  const std::string a_data("\x00\x00\x80\x3f", 4);  // f32 1
  const std::string c_data("\x07\x00\x00\x00", 4);  // i32 7
  const std::vector<st::TensorData> tensors = {
      {"b.weight", st::Dtype::BF16, {2}, bytes_of(b_data)},
      {"a.weight", st::Dtype::F32, {1}, bytes_of(a_data)},
      {"c", st::Dtype::I32, {}, bytes_of(c_data)},
  };
  st::write_file(dir_ / "m.safetensors", tensors);

  const std::string json = R"({"__metadata__":{"format":"pt"},)"
                           R"("a.weight":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                           R"("c":{"dtype":"I32","shape":[],"data_offsets":[4,8]},)"
                           R"("b.weight":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]}})";
  ASSERT_EQ(json.size(), 206u);  // so 2 spaces pad it to 208
  const std::string expected = file_bytes(json + "  ", a_data + c_data + b_data);
  EXPECT_EQ(read(dir_ / "m.safetensors"), expected);
  EXPECT_EQ(expected.substr(0, 8), std::string("\xd0\0\0\0\0\0\0\0", 8));

  const st::File file(dir_ / "m.safetensors");
  EXPECT_EQ(file.header_bytes(), 208u);
  EXPECT_EQ(file.metadata(), (st::Metadata{{"format", "pt"}}));
  ASSERT_EQ(file.tensors().size(), 3u);
  EXPECT_EQ(file.tensors()[0].name, "a.weight");
  const st::TensorInfo& b = file.info("b.weight");
  EXPECT_EQ(b.dtype, st::Dtype::BF16);
  EXPECT_EQ(b.shape, std::vector<int64_t>{2});
  EXPECT_EQ(b.data_begin, 8u);
  const auto view = file.bytes(b);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(view.data()), view.size()), b_data);
  EXPECT_TRUE(file.info("c").shape.empty());
  EXPECT_EQ(file.info("c").elements(), 1);
}

// Files as the reference's tests write them: an unpadded header, scalars, empty tensors, JSON
// whitespace around the header.
TEST_F(WeightsTest, ReadsReferenceTestVectors) {
  const std::string data16(16, '\0');
  const st::File plain(write(
      "a", file_bytes(R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})", data16)));
  EXPECT_EQ(plain.info("test").shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(plain.bytes(plain.info("test")).size(), 16u);

  const st::File scalar(
      write("b", file_bytes(R"({"test":{"dtype":"I32","shape":[],"data_offsets":[0,4]}})",
                            data16.substr(0, 4))));
  EXPECT_EQ(scalar.info("test").bytes(), 4u);

  const st::File empty(write(
      "c", file_bytes(R"({"test":{"dtype":"I32","shape":[2,0],"data_offsets":[0, 0]}})", "")));
  EXPECT_EQ(empty.info("test").elements(), 0);

  EXPECT_TRUE(st::File(write("d", file_bytes("\x09\x0a{}\x0d\x20", ""))).tensors().empty());
}

TEST_F(WeightsTest, RoundTripsEveryDtype) {
  std::mt19937_64 rng(7);
  std::vector<std::string> data;
  std::vector<st::TensorData> tensors;
  const std::vector<std::vector<int64_t>> shapes = {{3, 5}, {7}, {}, {2, 0, 3}, {2, 3, 4}};
  for (int d = 0; d <= static_cast<int>(st::Dtype::U64); ++d) {
    const auto dtype = static_cast<st::Dtype>(d);
    const std::vector<int64_t>& shape = shapes[d % shapes.size()];
    int64_t n = st::dtype_bytes(dtype);
    for (int64_t s : shape) n *= s;
    std::string bytes(static_cast<size_t>(n), '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    data.push_back(std::move(bytes));
    tensors.push_back({"t." + std::string(st::dtype_name(dtype)), dtype, shape, {}});
  }
  for (size_t i = 0; i < tensors.size(); ++i) tensors[i].bytes = bytes_of(data[i]);
  st::write_file(dir_ / "all.safetensors", tensors, {{"format", "pt"}, {"note", "round trip"}});

  const st::File file(dir_ / "all.safetensors");
  EXPECT_EQ(file.header_bytes() % 8, 0u);
  EXPECT_EQ(file.metadata().at("note"), "round trip");
  ASSERT_EQ(file.tensors().size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    SCOPED_TRACE(tensors[i].name);
    const st::TensorInfo& info = file.info(tensors[i].name);
    EXPECT_EQ(info.dtype, tensors[i].dtype);
    EXPECT_EQ(info.shape, tensors[i].shape);
    const auto view = file.bytes(info);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(view.data()), view.size()), data[i]);
    // Descending alignment keeps every tensor aligned to its element size.
    EXPECT_EQ((8 + file.header_bytes() + info.data_begin) % st::dtype_bytes(info.dtype), 0u);
  }
  EXPECT_EQ(st::parse_dtype("BF16"), st::Dtype::BF16);
  EXPECT_FALSE(st::parse_dtype("bf16").has_value());
}

TEST_F(WeightsTest, WriterRejectsBadTensors) {
  const std::string four(4, '\0');
  const st::TensorData short_data{"w", st::Dtype::F32, {2}, bytes_of(four)};
  EXPECT_TRUE(contains(error_of([&] { st::make_header(std::span(&short_data, 1), {}); }),
                       "tensor 'w': shape [2] of F32 takes 8 bytes, given 4"));
  const std::vector<st::TensorData> twice = {{"w", st::Dtype::F32, {1}, bytes_of(four)},
                                             {"w", st::Dtype::F32, {1}, bytes_of(four)}};
  EXPECT_TRUE(contains(error_of([&] { st::make_header(twice, {}); }), "'w' given twice"));
}

// ---------------------------------------------------------------------------------------------
// Corrupted files: every error names the file, and the tensor where there is one.

class CorruptTest : public WeightsTest {
 protected:
  // The error opening a file with these bytes; it must name the file.
  std::string open_error(const std::string& bytes) {
    const fs::path path = write("bad.safetensors", bytes);
    const std::string message = error_of([&] { st::File file(path); });
    EXPECT_TRUE(contains(message, path.string()));
    return message;
  }

  static std::string entry(const std::string& name, const std::string& dtype,
                           const std::string& shape, const std::string& offsets) {
    return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
           ",\"data_offsets\":" + offsets + "}";
  }
};

TEST_F(CorruptTest, Truncated) {
  const std::string good = file_bytes("{" + entry("first", "F32", "[2]", "[0,8]") + "," +
                                          entry("last", "BF16", "[4]", "[8,16]") + "}",
                                      std::string(16, 'x'));
  EXPECT_TRUE(contains(open_error(good.substr(0, good.size() - 3)), "tensor 'last'",
                       "[8, 16] extend past the end", "truncated"));
  EXPECT_TRUE(contains(open_error(good.substr(0, 20)), "runs past the end of the 20-byte file"));
  EXPECT_TRUE(contains(open_error(good.substr(0, 5)), "5 bytes is too short"));
}

TEST_F(CorruptTest, HeaderLengthTooBig) {
  std::string bytes = file_bytes("{}      ", "");
  bytes[5] = '\x01';  // 2^40 + 8
  EXPECT_TRUE(contains(open_error(bytes), "header length 1099511627784 exceeds the limit"));
  bytes = file_bytes("{}", "");
  bytes[0] = 100;
  EXPECT_TRUE(contains(open_error(bytes), "header length 100 runs past the end"));
}

TEST_F(CorruptTest, OverlappingOffsets) {
  const std::string header =
      "{" + entry("a", "F32", "[2]", "[0,8]") + "," + entry("b", "F32", "[2]", "[4,12]") + "}";
  EXPECT_TRUE(contains(open_error(file_bytes(header, std::string(12, 'x'))),
                       "tensor 'b': data_offsets [4, 12] overlap tensor 'a' [0, 8]"));
}

TEST_F(CorruptTest, GapAndTrailingBytes) {
  const std::string gap =
      "{" + entry("a", "F32", "[1]", "[0,4]") + "," + entry("b", "F32", "[1]", "[8,12]") + "}";
  EXPECT_TRUE(contains(open_error(file_bytes(gap, std::string(12, 'x'))),
                       "tensor 'b': data_offsets [8, 12] leave a gap after tensor 'a' [0, 4]"));
  const std::string one = "{" + entry("a", "F32", "[1]", "[0,4]") + "}";
  EXPECT_TRUE(contains(open_error(file_bytes(one, std::string(6, 'x'))),
                       "2 bytes follow the last tensor's data ('a')"));
}

TEST_F(CorruptTest, DuplicateTensor) {
  const std::string header =
      "{" + entry("w", "F32", "[1]", "[0,4]") + "," + entry("w", "F32", "[1]", "[4,8]") + "}";
  EXPECT_TRUE(contains(open_error(file_bytes(header, std::string(8, 'x'))),
                       "tensor 'w': appears twice in the header"));
}

TEST_F(CorruptTest, BadDtype) {
  const std::string header = "{" + entry("model.norm.weight", "F7", "[1]", "[0,4]") + "}";
  EXPECT_TRUE(contains(open_error(file_bytes(header, std::string(4, 'x'))),
                       "tensor 'model.norm.weight': dtype 'F7' is not supported"));
}

TEST_F(CorruptTest, ShapeDisagreesWithByteCount) {
  const std::string header = "{" + entry("w", "F32", "[3]", "[0,8]") + "}";
  EXPECT_TRUE(contains(open_error(file_bytes(header, std::string(8, 'x'))),
                       "tensor 'w': dtype F32 and shape [3] take 12 bytes, but data_offsets "
                       "[0, 8] hold 8"));
  // The reference's overflow vector: 2 * (2^64 - 2) elements.
  const std::string huge = "{" + entry("w", "I32", "[2,18446744073709551614]", "[0,16]") + "}";
  EXPECT_TRUE(contains(open_error(file_bytes(huge, std::string(16, 'x'))),
                       "tensor 'w': field 'shape': 18446744073709551614 is not a non-negative"));
  const std::string big = "{" + entry("w", "I32", "[2,9223372036854775807]", "[0,16]") + "}";
  EXPECT_TRUE(contains(open_error(file_bytes(big, std::string(16, 'x'))),
                       "tensor 'w': dtype I32 and shape [2, 9223372036854775807] take more than"));
}

TEST_F(CorruptTest, BadJson) {
  EXPECT_TRUE(contains(open_error(file_bytes(R"({"w":{"dtype":"F32",)", "")),
                       "header is not valid JSON (at byte"));
  EXPECT_TRUE(contains(open_error(file_bytes("[]", "")), "header must be a JSON object"));
  EXPECT_TRUE(contains(
      open_error(file_bytes(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", "")),
      "tensor 'w': field 'shape': -1 is not a non-negative integer"));
  EXPECT_TRUE(contains(open_error(file_bytes(R"({"w":{"dtype":"F32","shape":[1]}})", "")),
                       "tensor 'w': field 'data_offsets': expected [begin, end]"));
  EXPECT_TRUE(
      contains(open_error(file_bytes(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})",
                                     std::string(4, 'x'))),
               "tensor 'w': data_offsets [4, 0] end before they begin"));
  EXPECT_TRUE(contains(open_error(file_bytes(R"({"__metadata__":{"format":1}})", "")),
                       "'__metadata__' value 'format' must be a string"));
  EXPECT_TRUE(
      contains(open_error(file_bytes(R"({"w":[1,2]})", "")), "tensor 'w': expected a JSON object"));
}

// ---------------------------------------------------------------------------------------------
// Checkpoint directories.

TEST_F(WeightsTest, ShardedCheckpointRoundTrips) {
  std::vector<std::string> data;
  std::vector<st::TensorData> tensors;
  for (int i = 0; i < 5; ++i) data.push_back(std::string(100 + i, static_cast<char>('a' + i)));
  for (int i = 0; i < 5; ++i) {
    tensors.push_back({"t" + std::to_string(i), st::Dtype::U8, {100 + i}, bytes_of(data[i])});
  }
  // 100 + 101 fits 250; each following pair does too: 3 shards.
  const auto written = st::write_checkpoint(dir_, tensors, 250);
  ASSERT_EQ(written.size(), 4u);
  EXPECT_EQ(written[0].filename(), "model-00001-of-00003.safetensors");
  const nlohmann::json index = model::read_json_file(dir_ / st::kIndexFile);
  EXPECT_EQ(index["metadata"]["total_size"], 510);
  EXPECT_EQ(index["weight_map"]["t4"], "model-00003-of-00003.safetensors");

  const st::Checkpoint checkpoint(dir_);
  EXPECT_EQ(checkpoint.files().size(), 3u);
  ASSERT_EQ(checkpoint.tensors().size(), 5u);
  const st::Checkpoint::Entry* t3 = checkpoint.find("t3");
  ASSERT_NE(t3, nullptr);
  EXPECT_EQ(t3->file->path().filename(), "model-00002-of-00003.safetensors");
  const auto view = t3->file->bytes(*t3->info);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(view.data()), view.size()), data[3]);

  // Rewriting as one file removes the shards and the index, which would shadow it.
  st::write_checkpoint(dir_, tensors);
  EXPECT_FALSE(fs::exists(dir_ / st::kIndexFile));
  EXPECT_FALSE(fs::exists(written[0]));
  EXPECT_EQ(st::Checkpoint(dir_).files().size(), 1u);
  EXPECT_EQ(st::Checkpoint(dir_ / st::kSingleFile).tensors().size(), 5u);
}

TEST_F(WeightsTest, BadCheckpointDirectories) {
  EXPECT_TRUE(contains(error_of([&] { st::Checkpoint c(dir_); }),
                       "holds neither model.safetensors nor model.safetensors.index.json"));
  EXPECT_TRUE(
      contains(error_of([&] { st::Checkpoint c(dir_ / "nope"); }), "no such file or directory"));

  const std::string one(4, 'x');
  const st::TensorData t{"w", st::Dtype::F32, {1}, bytes_of(one)};
  st::write_file(dir_ / "shard-a.safetensors", std::span(&t, 1));
  write(std::string(st::kIndexFile), R"({"weight_map":{"w":"shard-b.safetensors"}})");
  EXPECT_TRUE(contains(error_of([&] { st::Checkpoint c(dir_); }),
                       "weight_map names shard 'shard-b.safetensors'"));
  write(std::string(st::kIndexFile),
        R"({"weight_map":{"w":"shard-a.safetensors","v":"shard-a.safetensors"}})");
  EXPECT_TRUE(contains(error_of([&] { st::Checkpoint c(dir_); }),
                       "field 'weight_map.v': says shard 'shard-a.safetensors', but that shard "
                       "does not hold this tensor"));
  write(std::string(st::kIndexFile), R"({"weight_map":{"w":"../shard-a.safetensors"}})");
  EXPECT_TRUE(contains(error_of([&] { st::Checkpoint c(dir_); }), "is not a file name inside"));
}

// ---------------------------------------------------------------------------------------------
// Deterministic random weights.

std::vector<uint16_t> generated(uint64_t seed, const std::string& name,
                                const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<uint16_t> values(static_cast<size_t>(n));
  generate_random(seed, name, shape, values);
  return values;
}

std::vector<uint16_t> to_vector(std::span<const uint16_t> values) {
  return {values.begin(), values.end()};
}

TEST(RandomWeights, SameSeedAndNameGiveSameBytesInAnyOrder) {
  const std::vector<int64_t> shape = {64, 48};
  const auto a_first = generated(3, "model.layers.0.mlp.up_proj.weight", shape);
  const auto b_second = generated(3, "model.layers.0.mlp.down_proj.weight", shape);
  const auto b_first = generated(3, "model.layers.0.mlp.down_proj.weight", shape);
  const auto a_second = generated(3, "model.layers.0.mlp.up_proj.weight", shape);
  EXPECT_EQ(a_first, a_second);
  EXPECT_EQ(b_first, b_second);
  EXPECT_NE(a_first, b_first);
  EXPECT_NE(a_first, generated(4, "model.layers.0.mlp.up_proj.weight", shape));
  // A prefix of a longer tensor: element i depends on (seed, name, i) alone.
  const auto longer = generated(3, "model.layers.0.mlp.up_proj.weight", {128, 48});
  EXPECT_TRUE(std::equal(a_first.begin(), a_first.end(), longer.begin()));
}

// Pinned values: a generator change alters every saved random checkpoint, so it must be deliberate.
TEST(RandomWeights, PinnedValues) {
  // 0.00360107, -0.00588989, -0.0100708, 0.0230713
  EXPECT_EQ(generated(0, "model.layers.0.self_attn.q_proj.weight", {4}),
            (std::vector<uint16_t>{0x3b6c, 0xbbc1, 0xbc25, 0x3cbd}));
  // 1.09375, 0.941406, 1.01562, 0.929688
  EXPECT_EQ(generated(0, "model.norm.weight", {4}),
            (std::vector<uint16_t>{0x3f8c, 0x3f71, 0x3f82, 0x3f6e}));
}

TEST(RandomWeights, IndependentOfStageGraphAndThreads) {
  const model::ModelSpec spec = tiny("tiny-qwen3");
  const HostWeights prefill = HostWeights::random(stage_graph(spec, "prefill", 3), 11);
  const HostWeights decode = HostWeights::random(stage_graph(spec, "decode", 1), 11);
  const HostWeights whole = HostWeights::random(spec, 11);
  ASSERT_EQ(prefill.tensors().size(), decode.tensors().size());
  EXPECT_EQ(whole.tensors().size(), decode.tensors().size());
  for (const auto& [name, t] : decode.tensors()) {
    SCOPED_TRACE(name);
    EXPECT_EQ(to_vector(prefill.at(name).values()), to_vector(t.values()));
    EXPECT_EQ(to_vector(whole.at(name).values()), to_vector(t.values()));
    EXPECT_EQ(to_vector(t.values()), generated(11, name, t.shape()));  // one thread, one tensor
  }
  EXPECT_EQ(decode.source(), "random weights (seed 11)");
}

TEST(RandomWeights, NeverZeroWithTheRightDistribution) {
  const model::ModelSpec spec = tiny("tiny-qwen3");
  const HostWeights weights = HostWeights::random(spec, 5);
  // embed, 2 x (input norm, q, k, v, q_norm, k_norm, o, post norm, gate, up, down), norm, lm_head
  EXPECT_EQ(weights.tensors().size(), 25u);
  for (const auto& [name, t] : weights.tensors()) {
    SCOPED_TRACE(name);
    const bool norm = t.shape().size() == 1;
    EXPECT_EQ(norm, name.find("norm") != std::string::npos);
    for (uint16_t bits : t.values()) {
      const float v = bf16_to_float(bits);
      ASSERT_NE(v, 0.0f);
      ASSERT_TRUE(std::isfinite(v));
      if (norm) {  // 1 + uniform(-0.1, 0.1), rounded to bf16
        ASSERT_GE(v, round_to_bf16(0.9f));
        ASSERT_LE(v, round_to_bf16(1.1f));
      }
    }
  }

  // 4M samples of normal(0, 0.02): mean within 4 standard errors (4 * 0.02 / 2048 = 4e-5), the
  // standard deviation within 0.5%, and the fractions within 1 and 2 sigma close to 68.27% and
  // 95.45% (bf16 rounding moves a value by at most 0.4% of itself).
  const auto values = generated(1, "model.embed_tokens.weight", {2048, 2048});
  double sum = 0, sum_sq = 0;
  int64_t within_1 = 0, within_2 = 0;
  for (uint16_t bits : values) {
    const double v = bf16_to_float(bits);
    sum += v;
    sum_sq += v * v;
    within_1 += std::fabs(v) < 0.02;
    within_2 += std::fabs(v) < 0.04;
  }
  const double n = static_cast<double>(values.size());
  EXPECT_NEAR(sum / n, 0.0, 4e-5);
  EXPECT_NEAR(std::sqrt(sum_sq / n), 0.02, 1e-4);
  EXPECT_NEAR(within_1 / n, 0.6827, 2e-3);
  EXPECT_NEAR(within_2 / n, 0.9545, 1e-3);

  // Norm scales: uniform over [0.9, 1.1], so their mean is 1.
  const auto norms = generated(1, "model.layers.0.input_layernorm.weight", {1 << 16});
  double norm_sum = 0;
  for (uint16_t bits : norms) norm_sum += bf16_to_float(bits);
  EXPECT_NEAR(norm_sum / norms.size(), 1.0, 2e-3);
}

// ---------------------------------------------------------------------------------------------
// Checks against a graph.

TEST(HostWeightsCheck, AcceptsMatchingWeights) {
  const model::ModelSpec spec = tiny("tiny-llama");
  const HostWeights weights = HostWeights::random(spec, 1);
  EXPECT_NO_THROW(weights.check(stage_graph(spec, "prefill")));
  EXPECT_NO_THROW(weights.check(stage_graph(spec, "decode")));
  // Tied embeddings: one table, no lm_head.weight.
  EXPECT_EQ(weights.find("lm_head.weight"), nullptr);
  EXPECT_NE(weights.find("model.embed_tokens.weight"), nullptr);
}

TEST(HostWeightsCheck, NamesShapeMismatchesAndMissingTensors) {
  const model::ModelSpec spec = tiny("tiny-llama");
  HostWeights weights("ckpt");
  const HostWeights all = HostWeights::random(spec, 1);
  for (const auto& [name, t] : all.tensors()) {
    if (name == "model.norm.weight" || name == "model.layers.0.self_attn.q_proj.weight") continue;
    weights.add(name, t);
  }
  weights.add("model.layers.1.mlp.up_proj.weight",
              HostTensor({160, 32}, std::vector<uint16_t>(160 * 32, 0x3f80)));
  const std::string message = error_of([&] { weights.check(stage_graph(spec, "decode")); });
  EXPECT_TRUE(
      contains(message, "ckpt: weights do not fit the decode graph (1 mismatched, 2 missing)"));
  EXPECT_TRUE(contains(message,
                       "\n  model.layers.1.mlp.up_proj.weight: expected [160, 64] bf16, "
                       "checkpoint has [160, 32]"));
  EXPECT_TRUE(
      contains(message, "\n  missing: model.layers.0.self_attn.q_proj.weight model.norm.weight"));
}

// A rank's slices under tensor parallel: rows of column-parallel linears and of the vocabulary-
// sliced table, columns of row-parallel linears, norms whole; each value where the full tensor
// has it.
TEST(HostWeightsRank, SlicesAsTheRankGraphsShapesSay) {
  const model::ModelSpec spec = tiny("tiny-llama");
  const HostWeights full = HostWeights::random(spec, 1);
  const model::Graph g =
      model::build_graph(spec, model::make_scenario(spec, 1, 16, 0, 2), "decode");
  const HostWeights r1 = full.rank(g, 2, 1);
  EXPECT_EQ(r1.source(), "random weights (seed 1), rank 1 of 2");
  auto value = [](const HostTensor& t, int64_t row, int64_t col) {
    return t.values()[row * t.shape()[1] + col];
  };
  // q_proj (4 heads of 16 over 64): rank 1 holds heads 2 and 3, rows 32..63.
  const HostTensor& q = r1.at("model.layers.0.self_attn.q_proj.weight");
  const HostTensor& q_full = full.at("model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(q.shape(), (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(value(q, 0, 5), value(q_full, 32, 5));
  // o_proj (64 out, 64 in): rank 1 holds input columns 32..63.
  const HostTensor& o = r1.at("model.layers.0.self_attn.o_proj.weight");
  const HostTensor& o_full = full.at("model.layers.0.self_attn.o_proj.weight");
  EXPECT_EQ(o.shape(), (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(value(o, 7, 3), value(o_full, 7, 35));
  // The table (300 ids): rank 1 holds ids 150..299.
  const HostTensor& table = r1.at("model.embed_tokens.weight");
  EXPECT_EQ(table.shape(), (std::vector<int64_t>{150, 64}));
  EXPECT_EQ(value(table, 0, 0), value(full.at("model.embed_tokens.weight"), 150, 0));
  // A norm is every rank's, the same values.
  EXPECT_EQ(r1.at("model.norm.weight").values().data(),
            full.at("model.norm.weight").values().data());
  // k and v (2 KV heads): one head each; gate and up (160 features): 80 rows; down: 80 columns.
  const std::string layer = "model.layers.1.";
  EXPECT_EQ(r1.at(layer + "self_attn.k_proj.weight").shape(), (std::vector<int64_t>{16, 64}));
  EXPECT_EQ(r1.at(layer + "self_attn.v_proj.weight").shape(), (std::vector<int64_t>{16, 64}));
  EXPECT_EQ(r1.at(layer + "mlp.gate_proj.weight").shape(), (std::vector<int64_t>{80, 64}));
  EXPECT_EQ(r1.at(layer + "mlp.up_proj.weight").shape(), (std::vector<int64_t>{80, 64}));
  const HostTensor& down = r1.at(layer + "mlp.down_proj.weight");
  EXPECT_EQ(down.shape(), (std::vector<int64_t>{64, 80}));
  EXPECT_EQ(value(down, 63, 79), value(full.at(layer + "mlp.down_proj.weight"), 63, 159));
  EXPECT_NO_THROW(r1.check(g));
}

TEST(HostWeightsRank, RefusesNoSuchRankAndShapesNoSplitGives) {
  const model::ModelSpec spec = tiny("tiny-llama");
  const HostWeights full = HostWeights::random(spec, 1);
  const model::Graph g =
      model::build_graph(spec, model::make_scenario(spec, 1, 16, 0, 2), "decode");
  EXPECT_EQ(error_of([&] { full.rank(g, 2, 2); }), "weights of rank 2 of 2 GPUs: no such rank");
  EXPECT_EQ(error_of([&] { full.rank(g, 4, 1); }),
            "weights of rank 1 of 4 GPUs: the decode graph is one rank's of 2 GPUs");
  EXPECT_EQ(error_of([&] { full.rank(stage_graph(spec, "decode"), 2, 1); }),
            "weights of rank 1 of 2 GPUs: the decode graph is one rank's of 1 GPU");
  // Weights of another model (its q_proj 48 rows): no split of 2 gives the rank's 32.
  HostWeights other("ckpt");
  for (const auto& [name, t] : full.tensors()) other.add(name, t);
  other.add("model.layers.0.self_attn.q_proj.weight",
            HostTensor({48, 64}, std::vector<uint16_t>(48 * 64, 0x3f80)));
  EXPECT_EQ(error_of([&] { other.rank(g, 2, 0); }),
            "model.layers.0.self_attn.q_proj.weight: ckpt has [48, 64], rank 0 of 2 GPUs needs "
            "[32, 64], which is neither its rows nor its columns split 2 ways");
}

// ---------------------------------------------------------------------------------------------
// Loading and saving checkpoints.

TEST_F(WeightsTest, LoadsFloatCheckpointsAsBf16) {
  const std::vector<float> f32 = {1.0f, -2.5f, 1.0f + 0x1p-8f + 0x1p-20f, 3.0e-3f};
  const std::vector<uint16_t> f16 = {0x3c00, 0xc100, 0x0001, 0x7bff};  // 1, -2.5, 2^-24, 65504
  const std::vector<uint16_t> bf16 = {0x3f80, 0x4000};
  const std::vector<int32_t> i32 = {1, 2};
  const std::vector<st::TensorData> tensors = {
      {"a", st::Dtype::F32, {2, 2}, std::as_bytes(std::span(f32))},
      {"b", st::Dtype::F16, {4}, std::as_bytes(std::span(f16))},
      {"c", st::Dtype::BF16, {2}, std::as_bytes(std::span(bf16))},
      {"model.norm.weight", st::Dtype::I32, {2}, std::as_bytes(std::span(i32))},
  };
  st::write_file(dir_ / "model.safetensors", tensors);
  const HostWeights weights = HostWeights::load(dir_);
  EXPECT_EQ(weights.source(), dir_.string());
  EXPECT_EQ(weights.at("a").shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(to_vector(weights.at("a").values()),
            (std::vector<uint16_t>{0x3f80, 0xc020, 0x3f81, float_to_bf16(3.0e-3f)}));
  EXPECT_EQ(to_vector(weights.at("b").values()),
            (std::vector<uint16_t>{0x3f80, 0xc020, float_to_bf16(0x1p-24f), float_to_bf16(65504)}));
  EXPECT_EQ(to_vector(weights.at("c").values()), bf16);
  EXPECT_EQ(weights.find("model.norm.weight"), nullptr);

  // A graph that wants model.norm.weight hears it is an I32 tensor, not that it is missing.
  const model::Graph graph = stage_graph(tiny("tiny-llama"), "decode");
  EXPECT_TRUE(contains(error_of([&] { weights.check(graph); }),
                       "model.norm.weight: expected [64] bf16, checkpoint has [2] I32 (not a "
                       "float dtype)"));
  EXPECT_TRUE(contains(error_of([&] { weights.at("nope"); }), "no weight tensor 'nope'"));
}

// A header of odd length (legal, if not what the reference writes) puts bf16 data at an odd
// address: it is copied out rather than viewed in place.
TEST_F(WeightsTest, LoadsBf16AtAnOddOffset) {
  const std::string header = R"({"w":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})";
  ASSERT_EQ(header.size() % 2, 1u);
  write("model.safetensors", file_bytes(header, std::string("\x80\x3f\x00\xc0", 4)));
  const HostWeights weights = HostWeights::load(dir_);
  EXPECT_EQ(to_vector(weights.at("w").values()), (std::vector<uint16_t>{0x3f80, 0xc000}));
}

TEST_F(WeightsTest, SavedCheckpointLoadsBackIdentically) {
  const model::ModelSpec spec = tiny("tiny-llama");
  const HostWeights weights = HostWeights::random(spec, 9);
  save_checkpoint(dir_, spec, weights);
  EXPECT_TRUE(fs::exists(dir_ / "config.json"));
  EXPECT_TRUE(fs::exists(dir_ / "model.safetensors"));

  const st::File file(dir_ / "model.safetensors");
  EXPECT_EQ(file.metadata().at("format"), "pt");  // transformers requires it
  EXPECT_EQ(file.find("lm_head.weight"), nullptr);
  for (const st::TensorInfo& t : file.tensors()) EXPECT_EQ(t.dtype, st::Dtype::BF16);

  const LoadedCheckpoint loaded = load_checkpoint(dir_);
  EXPECT_EQ(loaded.model.config, spec.config);
  EXPECT_EQ(loaded.model.decoder.hidden_size, spec.decoder.hidden_size);
  ASSERT_EQ(loaded.weights.tensors().size(), weights.tensors().size());
  for (const auto& [name, t] : weights.tensors()) {
    EXPECT_EQ(to_vector(loaded.weights.at(name).values()), to_vector(t.values())) << name;
    EXPECT_EQ(loaded.weights.at(name).shape(), t.shape());
  }
  EXPECT_NO_THROW(loaded.weights.check(stage_graph(loaded.model, "prefill")));

  // Sharded, the same tensors come back through the index.
  const fs::path sharded = dir_ / "sharded";
  save_checkpoint(sharded, spec, weights, 20000);
  EXPECT_TRUE(fs::exists(sharded / st::kIndexFile));
  EXPECT_FALSE(fs::exists(sharded / st::kSingleFile));
  const HostWeights reloaded = HostWeights::load(sharded);
  for (const auto& [name, t] : weights.tensors()) {
    EXPECT_EQ(to_vector(reloaded.at(name).values()), to_vector(t.values())) << name;
  }
}

TEST_F(WeightsTest, SaveRefusesWeightsThatDoNotFitTheModel) {
  const HostWeights weights = HostWeights::random(tiny("tiny-llama"), 1);
  EXPECT_TRUE(
      contains(error_of([&] { save_checkpoint(dir_, tiny("tiny-qwen3"), weights); }), "missing:"));
  EXPECT_FALSE(fs::exists(dir_ / "model.safetensors"));
}

// ---------------------------------------------------------------------------------------------
// The device arena.

TEST(WeightArena, TiedEmbeddingSharedAndQkvConcatenatedInOrder) {
  const model::ModelSpec spec = tiny("tiny-llama");  // tied, 4 heads of 16, 2 kv heads
  const model::Graph graph = stage_graph(spec, "decode");
  const HostWeights weights = HostWeights::random(spec, 2);
  const WeightArenaPlan plan = plan_weight_arena(graph);

  int embed = -1, lm_head = -1, qkv = -1, attention = -1;
  for (const model::Op& op : graph.ops()) {
    if (op.name == "embed") embed = op.index;
    if (op.name == "lm_head") lm_head = op.index;
    if (op.name == "layers.0.attn.qkv") qkv = op.index;
    if (op.name == "layers.0.attn.attention") attention = op.index;
  }
  ASSERT_GE(embed, 0);
  ASSERT_GE(lm_head, 0);
  ASSERT_GE(qkv, 0);
  EXPECT_EQ(plan.op_slot[0][embed], plan.op_slot[0][lm_head]);
  EXPECT_EQ(plan.op_offset_bytes(0, attention), -1);  // no qk-norm: no weights
  // embed/lm_head, final norm, and 4 per layer (qkv with its norm, o, gate_up with its norm,
  // down: decode fuses the norms into the linears after them): 10 slots, holding every parameter
  // once.
  EXPECT_EQ(plan.slots.size(), 10u);
  int64_t packed = 0;
  for (const WeightSlot& s : plan.slots) {
    EXPECT_EQ(s.offset_bytes % kWeightAlignmentBytes, 0);
    packed += s.bytes;
  }
  EXPECT_EQ(packed, graph.parameter_bytes());
  EXPECT_LT(plan.arena_bytes, packed + 10 * kWeightAlignmentBytes);

  const WeightSlot& slot = plan.slots[plan.op_slot[0][qkv]];
  // q, k, v and the norm's scale end to end: the (128, 64) matrix, then 64 values.
  EXPECT_EQ(slot.shape, (std::vector<int64_t>{(64 + 32 + 32) * 64 + 64}));
  ASSERT_EQ(slot.parts.size(), 4u);
  EXPECT_EQ(slot.parts[1].name, "model.layers.0.self_attn.k_proj.weight");
  EXPECT_EQ(slot.parts[3].name, "model.layers.0.input_layernorm.weight");

  const std::vector<std::byte> arena = pack_weight_arena(plan, weights);
  const std::byte* at = arena.data() + slot.offset_bytes;
  for (const char* part :
       {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "input_layernorm"}) {
    const HostTensor& t = weights.at(std::string("model.layers.0.") + part + ".weight");
    EXPECT_EQ(std::memcmp(at, t.values().data(), t.bytes()), 0) << part;
    at += t.bytes();
  }
  const std::byte* padding_end = arena.data() + plan.slots[plan.op_slot[0][qkv] + 1].offset_bytes;
  for (; at < padding_end; ++at) ASSERT_EQ(*at, std::byte{0});

  const std::vector<const void*> pointers = op_weight_pointers(plan, 0, arena.data());
  ASSERT_EQ(pointers.size(), static_cast<size_t>(graph.op_count()));
  EXPECT_EQ(pointers[embed], pointers[lm_head]);
  EXPECT_EQ(pointers[attention], nullptr);
  EXPECT_EQ(pointers[qkv], arena.data() + slot.offset_bytes);
}

// A convolution's kernel and bias differ in rank: they lie end to end in one slot. A TTS
// pipeline's random weights cover every stage.
TEST(WeightArena, KernelAndBiasLieEndToEnd) {
  const model::ModelSpec spec = tiny("tiny-llama-hifigan-tts");
  const model::Scenario scenario = model::make_scenario(spec, 1, 4, 2);
  const model::Graph vocoder = model::build_graph(spec, scenario, "vocoder");
  const HostWeights weights = HostWeights::random(spec, 3);
  for (const std::string& stage : scenario.stage_names()) {
    EXPECT_NO_THROW(weights.check(model::build_graph(spec, scenario, stage))) << stage;
  }
  const WeightArenaPlan plan = plan_weight_arena(vocoder);
  const model::Op& conv_pre = vocoder.op(0);
  ASSERT_EQ(conv_pre.name, "conv_pre");
  const WeightSlot& slot = plan.slots[plan.op_slot[0][conv_pre.index]];
  EXPECT_EQ(slot.shape, (std::vector<int64_t>{64 * 16 * 7 + 64}));
  const std::vector<std::byte> arena = pack_weight_arena(plan, weights);
  const HostTensor& kernel = weights.at("vocoder.conv_pre.weight");
  const HostTensor& bias = weights.at("vocoder.conv_pre.bias");
  const std::byte* at = arena.data() + slot.offset_bytes;
  EXPECT_EQ(std::memcmp(at, kernel.values().data(), kernel.bytes()), 0);
  EXPECT_EQ(std::memcmp(at + kernel.bytes(), bias.values().data(), bias.bytes()), 0);
}

TEST(WeightArena, StagesShareOneArena) {
  const model::ModelSpec spec = tiny("tiny-qwen3");  // untied, qk-norm
  const model::Graph prefill = stage_graph(spec, "prefill");
  const model::Graph decode = stage_graph(spec, "decode");
  const model::Graph* graphs[] = {&prefill, &decode};
  const WeightArenaPlan both = plan_weight_arena(graphs);
  EXPECT_EQ(both.arena_bytes, plan_weight_arena(decode).arena_bytes);

  // Decode's qkv-attention reads the q and k norms prefill's qk-norm reads: one slot for both.
  int lm_head = -1, embed = -1, qk_norm = -1, attention = -1;
  for (const model::Op& op : prefill.ops()) {
    if (op.name == "layers.1.attn.qk_norm") qk_norm = op.index;
  }
  for (const model::Op& op : decode.ops()) {
    if (op.name == "embed") embed = op.index;
    if (op.name == "lm_head") lm_head = op.index;
    if (op.name == "layers.1.attn.attention") attention = op.index;
  }
  EXPECT_NE(both.op_slot[1][embed], both.op_slot[1][lm_head]);  // untied: two tables
  ASSERT_GE(both.op_slot[1][attention], 0);
  EXPECT_EQ(both.op_slot[0][qk_norm], both.op_slot[1][attention]);
  const WeightSlot& norms = both.slots[both.op_slot[1][attention]];
  EXPECT_EQ(norms.shape, std::vector<int64_t>{64});  // q_norm then k_norm, 32 each
  EXPECT_EQ(norms.parts[0].name, "model.layers.1.self_attn.q_norm.weight");

  HostWeights wrong("ckpt");
  const HostWeights all = HostWeights::random(spec, 1);
  for (const auto& [name, t] : all.tensors()) wrong.add(name, t);
  wrong.add("model.norm.weight", HostTensor({32}, std::vector<uint16_t>(32, 0x3f80)));
  EXPECT_TRUE(contains(error_of([&] { pack_weight_arena(both, wrong); }),
                       "ckpt: model.norm.weight: expected [64], checkpoint has [32]"));
}

}  // namespace
}  // namespace megacut::executor
