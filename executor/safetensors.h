// safetensors, the Hugging Face weight format: read (memory-mapped, validated) and write.
//
// A file is an 8-byte little-endian header length n, n bytes of JSON mapping each tensor name to
// {dtype, shape, data_offsets: [begin, end]} (offsets into the data that follows the header) plus
// an optional "__metadata__" object of strings, then the raw little-endian, row-major data.
//
// Reading maps the file and checks the header against the file before anything uses it: the
// header fits, every tensor's byte count is its dtype size times its shape, and the tensors tile
// the data exactly (contiguous from 0, no overlap, no gap, nothing after the last), which is what
// the reference implementation accepts. Errors name the file and the tensor.
//
// Writing follows the reference writer byte for byte: tensors sorted by descending dtype
// alignment then name, compact JSON with "__metadata__" first, the header padded with spaces to
// a multiple of 8 bytes. A checkpoint is a directory holding model.safetensors, or
// model.safetensors.index.json and the shards it names, as transformers writes and loads them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace megacut::executor::safetensors {

namespace fs = std::filesystem;

// The dtypes whose element is a whole number of bytes, in the reference's order (increasing
// alignment), which the writer's sort depends on.
enum class Dtype {
  BOOL,
  U8,
  I8,
  F8_E5M2,
  F8_E4M3,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  F64,
  I64,
  U64
};

std::string_view dtype_name(Dtype dtype);  // as in the header: "BF16"
int dtype_bytes(Dtype dtype);
std::optional<Dtype> parse_dtype(std::string_view name);

using Metadata = std::map<std::string, std::string>;

// The largest header the reference implementation accepts.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;
inline constexpr std::string_view kSingleFile = "model.safetensors";
inline constexpr std::string_view kIndexFile = "model.safetensors.index.json";

struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::F32;
  std::vector<int64_t> shape;
  uint64_t data_begin = 0;  // offsets into the data section, as in the header
  uint64_t data_end = 0;

  int64_t elements() const;
  uint64_t bytes() const { return data_end - data_begin; }
};

// One .safetensors file, mapped read-only; tensor bytes are views into the mapping, paged in on
// first touch.
class File {
 public:
  explicit File(const fs::path& path);
  ~File();
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  const fs::path& path() const { return path_; }
  // In data order.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find(std::string_view name) const;
  // Throws naming the file and the tensor when absent.
  const TensorInfo& info(std::string_view name) const;
  std::span<const std::byte> bytes(const TensorInfo& tensor) const;
  const Metadata& metadata() const { return metadata_; }
  uint64_t header_bytes() const { return header_bytes_; }

 private:
  fs::path path_;
  const std::byte* map_ = nullptr;
  uint64_t map_bytes_ = 0;
  uint64_t header_bytes_ = 0;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> by_name_;
  Metadata metadata_;
};

// The tensors of a checkpoint: one file, a directory with model.safetensors, or a directory with
// model.safetensors.index.json and its shards.
class Checkpoint {
 public:
  explicit Checkpoint(const fs::path& path);

  struct Entry {
    std::shared_ptr<const File> file;
    const TensorInfo* info = nullptr;
  };

  const fs::path& path() const { return path_; }
  const std::vector<std::shared_ptr<const File>>& files() const { return files_; }
  // Sorted by name.
  const std::map<std::string, Entry, std::less<>>& tensors() const { return tensors_; }
  const Entry* find(std::string_view name) const;

 private:
  void add_file(std::shared_ptr<const File> file);

  fs::path path_;
  std::vector<std::shared_ptr<const File>> files_;
  std::map<std::string, Entry, std::less<>> tensors_;
};

// A tensor to write; `bytes` must hold elements * dtype_bytes bytes, little-endian, row-major.
struct TensorData {
  std::string name;
  Dtype dtype = Dtype::BF16;
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;
};

// transformers refuses a safetensors file without this metadata.
inline const Metadata kPytorchMetadata = {{"format", "pt"}};

// The header the reference writer produces for these tensors, padding included, with the
// tensors in the order their data follows it. An empty `metadata` writes no "__metadata__".
struct Header {
  std::string json;
  std::vector<const TensorData*> order;
};
Header make_header(std::span<const TensorData> tensors, const Metadata& metadata);

// Writes one file (through a temporary file renamed into place).
void write_file(const fs::path& path, std::span<const TensorData> tensors,
                const Metadata& metadata = kPytorchMetadata);

// Writes `dir`/model.safetensors, or, when the data exceeds `max_shard_bytes`, shards
// model-00001-of-0000N.safetensors (filled in name order, at most max_shard_bytes each unless a
// single tensor is larger) and model.safetensors.index.json. Earlier model.safetensors files,
// shards and index in `dir` are removed first so no stale file shadows the new ones. Returns the
// files written.
inline constexpr int64_t kDefaultMaxShardBytes = 5'000'000'000;  // transformers' "5GB"
std::vector<fs::path> write_checkpoint(const fs::path& dir, std::span<const TensorData> tensors,
                                       int64_t max_shard_bytes = kDefaultMaxShardBytes,
                                       const Metadata& metadata = kPytorchMetadata);

}  // namespace megacut::executor::safetensors
