#include "executor/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "model/config.h"
#include "model/error.h"
#include "model/output_file.h"
#include "model/tensor.h"

namespace megacut::executor::safetensors {
namespace {

using nlohmann::json;

struct DtypeName {
  Dtype dtype;
  std::string_view name;
  int bytes;
};

constexpr std::array<DtypeName, 15> kDtypes = {{{Dtype::BOOL, "BOOL", 1},
                                                {Dtype::U8, "U8", 1},
                                                {Dtype::I8, "I8", 1},
                                                {Dtype::F8_E5M2, "F8_E5M2", 1},
                                                {Dtype::F8_E4M3, "F8_E4M3", 1},
                                                {Dtype::I16, "I16", 2},
                                                {Dtype::U16, "U16", 2},
                                                {Dtype::F16, "F16", 2},
                                                {Dtype::BF16, "BF16", 2},
                                                {Dtype::I32, "I32", 4},
                                                {Dtype::U32, "U32", 4},
                                                {Dtype::F32, "F32", 4},
                                                {Dtype::F64, "F64", 8},
                                                {Dtype::I64, "I64", 8},
                                                {Dtype::U64, "U64", 8}}};

[[noreturn]] void fail(const fs::path& file, std::string_view what) {
  throw Error(file.string() + ": " + std::string(what));
}

[[noreturn]] void fail_tensor(const fs::path& file, std::string_view tensor,
                              std::string_view what) {
  fail(file, "tensor '" + std::string(tensor) + "': " + std::string(what));
}

using model::shape_text;

std::string range_text(uint64_t begin, uint64_t end) {
  std::string text = "[";
  text += std::to_string(begin);
  text += ", ";
  text += std::to_string(end);
  return text + "]";
}

// A non-negative integer that fits int64, or nullopt.
std::optional<int64_t> size_value(const json& value) {
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(v);
  }
  if (value.is_number_integer() && value.get<int64_t>() >= 0) return value.get<int64_t>();
  return std::nullopt;
}

std::string known_dtypes() {
  std::string text;
  for (const DtypeName& d : kDtypes) text += (text.empty() ? "" : ", ") + std::string(d.name);
  return text;
}

// One header entry other than "__metadata__", checked on its own (ranges are checked together
// once all are read).
TensorInfo parse_entry(const fs::path& file, const std::string& name, const json& entry,
                       uint64_t data_bytes) {
  if (!entry.is_object()) fail_tensor(file, name, "expected a JSON object, got " + entry.dump());
  TensorInfo t;
  t.name = name;

  if (!entry.contains("dtype") || !entry.at("dtype").is_string()) {
    fail_tensor(file, name, "field 'dtype': missing or not a string");
  }
  const std::string dtype = entry.at("dtype").get<std::string>();
  const std::optional<Dtype> parsed = parse_dtype(dtype);
  if (!parsed) {
    fail_tensor(file, name,
                "dtype '" + dtype + "' is not supported (supported: " + known_dtypes() + ")");
  }
  t.dtype = *parsed;

  if (!entry.contains("shape") || !entry.at("shape").is_array()) {
    fail_tensor(file, name, "field 'shape': missing or not an array");
  }
  uint64_t elements = 1;
  bool overflow = false;
  for (const json& dim : entry.at("shape")) {
    const std::optional<int64_t> size = size_value(dim);
    if (!size) {
      fail_tensor(file, name, "field 'shape': " + dim.dump() + " is not a non-negative integer");
    }
    t.shape.push_back(*size);
    overflow =
        overflow || __builtin_mul_overflow(elements, static_cast<uint64_t>(*size), &elements);
  }

  const json* offsets = entry.contains("data_offsets") ? &entry.at("data_offsets") : nullptr;
  if (offsets == nullptr || !offsets->is_array() || offsets->size() != 2 ||
      !size_value(offsets->at(0)) || !size_value(offsets->at(1))) {
    fail_tensor(file, name,
                "field 'data_offsets': expected [begin, end] of non-negative integers, got " +
                    (offsets == nullptr ? std::string("nothing") : offsets->dump()));
  }
  t.data_begin = static_cast<uint64_t>(*size_value(offsets->at(0)));
  t.data_end = static_cast<uint64_t>(*size_value(offsets->at(1)));
  if (t.data_end < t.data_begin) {
    fail_tensor(file, name,
                "data_offsets " + range_text(t.data_begin, t.data_end) + " end before they begin");
  }
  if (t.data_end > data_bytes) {
    fail_tensor(file, name,
                "data_offsets " + range_text(t.data_begin, t.data_end) +
                    " extend past the end of the data (" + std::to_string(data_bytes) +
                    " bytes after the header): the file is truncated or the offsets are wrong");
  }
  uint64_t expected = 0;
  overflow = overflow || __builtin_mul_overflow(
                             elements, static_cast<uint64_t>(dtype_bytes(t.dtype)), &expected);
  if (overflow || expected != t.bytes()) {
    fail_tensor(file, name,
                "dtype " + dtype + " and shape " + shape_text(t.shape) + " take " +
                    (overflow ? std::string("more than 2^64") : std::to_string(expected)) +
                    " bytes, but data_offsets " + range_text(t.data_begin, t.data_end) + " hold " +
                    std::to_string(t.bytes()));
  }
  return t;
}

Metadata parse_metadata(const fs::path& file, const json& value) {
  if (!value.is_object()) fail(file, "'__metadata__' must be an object of strings");
  Metadata metadata;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string()) {
      fail(file, "'__metadata__' value '" + key + "' must be a string, got " + item.dump());
    }
    metadata[key] = item.get<std::string>();
  }
  return metadata;
}

// The reference reader's rule: sorted by offset, the tensors cover [0, data_bytes) exactly.
void check_layout(const fs::path& file, const std::vector<TensorInfo>& tensors,
                  uint64_t data_bytes) {
  uint64_t next = 0;
  const TensorInfo* previous = nullptr;
  for (const TensorInfo& t : tensors) {
    if (t.data_begin < next) {
      fail_tensor(file, t.name,
                  "data_offsets " + range_text(t.data_begin, t.data_end) + " overlap tensor '" +
                      previous->name + "' " + range_text(previous->data_begin, previous->data_end));
    }
    if (t.data_begin > next) {
      fail_tensor(
          file, t.name,
          "data_offsets " + range_text(t.data_begin, t.data_end) + " leave a gap after " +
              (previous == nullptr ? std::string("the start of the data")
                                   : "tensor '" + previous->name + "' " +
                                         range_text(previous->data_begin, previous->data_end)) +
              ": tensor data must be contiguous");
    }
    next = t.data_end;
    previous = &t;
  }
  if (next != data_bytes) {
    fail(file, std::to_string(data_bytes - next) + " bytes follow the last tensor's data (" +
                   (previous == nullptr ? std::string("no tensors") : "'" + previous->name + "'") +
                   "): the header does not describe the whole file");
  }
}

uint64_t read_le64(const std::byte* p) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<uint8_t>(p[i]);
  return value;
}

}  // namespace

std::string_view dtype_name(Dtype dtype) { return kDtypes.at(static_cast<size_t>(dtype)).name; }

int dtype_bytes(Dtype dtype) { return kDtypes.at(static_cast<size_t>(dtype)).bytes; }

std::optional<Dtype> parse_dtype(std::string_view name) {
  for (const DtypeName& d : kDtypes) {
    if (d.name == name) return d.dtype;
  }
  return std::nullopt;
}

int64_t TensorInfo::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// ---------------------------------------------------------------------------------------------
// Reading.

File::File(const fs::path& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, "not a regular file");
  }
  const uint64_t file_bytes = static_cast<uint64_t>(st.st_size);
  if (file_bytes < 8) {
    ::close(fd);
    fail(path, std::to_string(file_bytes) +
                   " bytes is too short for a safetensors file (its header length alone takes 8)");
  }
  void* map = ::mmap(nullptr, file_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) fail(path, std::string("cannot map: ") + std::strerror(errno));
  map_ = static_cast<const std::byte*>(map);
  map_bytes_ = file_bytes;

  try {
    header_bytes_ = read_le64(map_);
    if (header_bytes_ > kMaxHeaderBytes) {
      fail(path, "header length " + std::to_string(header_bytes_) + " exceeds the limit of " +
                     std::to_string(kMaxHeaderBytes) + " bytes: not a safetensors file?");
    }
    if (8 + header_bytes_ > file_bytes) {
      fail(path, "header length " + std::to_string(header_bytes_) + " runs past the end of the " +
                     std::to_string(file_bytes) + "-byte file: truncated, or not safetensors");
    }
    const auto* text = reinterpret_cast<const char*>(map_ + 8);
    // A JSON parser keeps the last of two equal keys and says nothing; a duplicate is an error.
    std::set<std::string> names;
    const auto reject_duplicates = [&](int depth, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::key && depth == 1 &&
          !names.insert(parsed.get<std::string>()).second) {
        fail_tensor(path, parsed.get<std::string>(), "appears twice in the header");
      }
      return true;
    };
    json header;
    try {
      header = json::parse(text, text + header_bytes_, reject_duplicates);
    } catch (const json::parse_error& e) {
      fail(path, "header is not valid JSON (at byte " + std::to_string(e.byte) +
                     " of the header): " + e.what());
    }
    if (!header.is_object())
      fail(path, std::string("header must be a JSON object, got ") + header.type_name());

    const uint64_t data_bytes = file_bytes - 8 - header_bytes_;
    for (const auto& [key, value] : header.items()) {
      if (key == "__metadata__") {
        metadata_ = parse_metadata(path, value);
      } else {
        tensors_.push_back(parse_entry(path, key, value, data_bytes));
      }
    }
    std::sort(tensors_.begin(), tensors_.end(), [](const TensorInfo& a, const TensorInfo& b) {
      return std::tie(a.data_begin, a.data_end) < std::tie(b.data_begin, b.data_end);
    });
    check_layout(path, tensors_, data_bytes);
    for (size_t i = 0; i < tensors_.size(); ++i) by_name_.emplace(tensors_[i].name, i);
  } catch (...) {
    ::munmap(const_cast<std::byte*>(map_), map_bytes_);
    throw;
  }
}

File::~File() { ::munmap(const_cast<std::byte*>(map_), map_bytes_); }

const TensorInfo* File::find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& File::info(std::string_view name) const {
  const TensorInfo* t = find(name);
  if (t == nullptr) fail_tensor(path_, name, "not in this file");
  return *t;
}

std::span<const std::byte> File::bytes(const TensorInfo& tensor) const {
  return {map_ + 8 + header_bytes_ + tensor.data_begin, tensor.bytes()};
}

Checkpoint::Checkpoint(const fs::path& path) : path_(path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    add_file(std::make_shared<const File>(path));
    return;
  }
  if (!fs::is_directory(path, ec)) fail(path, "no such file or directory");

  const fs::path index_path = path / kIndexFile;
  if (!fs::exists(index_path, ec)) {
    const fs::path single = path / kSingleFile;
    if (!fs::exists(single, ec)) {
      fail(path, "holds neither " + std::string(kSingleFile) + " nor " + std::string(kIndexFile));
    }
    add_file(std::make_shared<const File>(single));
    return;
  }

  const json index = model::read_json_file(index_path);
  if (!index.is_object() || !index.contains("weight_map") || !index.at("weight_map").is_object()) {
    throw_field_error(index_path.string(), "weight_map", "missing or not an object");
  }
  std::map<std::string, std::string> weight_map;
  std::set<std::string> shards;
  for (const auto& [tensor, shard] : index.at("weight_map").items()) {
    if (!shard.is_string()) {
      throw_field_error(index_path.string(), "weight_map." + tensor,
                        "expected a file name, got " + shard.dump());
    }
    const std::string file = shard.get<std::string>();
    if (file.empty() || fs::path(file).is_absolute() || file.find("..") != std::string::npos) {
      throw_field_error(index_path.string(), "weight_map." + tensor,
                        "'" + file + "' is not a file name inside the checkpoint directory");
    }
    weight_map[tensor] = file;
    shards.insert(file);
  }
  for (const std::string& shard : shards) {
    if (!fs::exists(path / shard, ec)) {
      fail(index_path, "weight_map names shard '" + shard + "', but " + (path / shard).string() +
                           " does not exist");
    }
    add_file(std::make_shared<const File>(path / shard));
  }
  for (const auto& [tensor, shard] : weight_map) {
    const Entry* entry = find(tensor);
    if (entry == nullptr || entry->file->path() != path / shard) {
      throw_field_error(index_path.string(), "weight_map." + tensor,
                        "says shard '" + shard + "', but that shard does not hold this tensor");
    }
  }
}

void Checkpoint::add_file(std::shared_ptr<const File> file) {
  for (const TensorInfo& t : file->tensors()) {
    const auto [it, added] = tensors_.try_emplace(t.name, Entry{file, &t});
    if (!added) {
      fail_tensor(
          file->path(), t.name,
          "also in " + it->second.file->path().string() + ": a tensor may be in one shard only");
    }
  }
  files_.push_back(std::move(file));
}

const Checkpoint::Entry* Checkpoint::find(std::string_view name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

// ---------------------------------------------------------------------------------------------
// Writing.

Header make_header(std::span<const TensorData> tensors, const Metadata& metadata) {
  Header header;
  std::set<std::string_view> names;
  for (const TensorData& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__") {
      throw Error("safetensors: '" + t.name + "' cannot name a tensor");
    }
    if (!names.insert(t.name).second)
      throw Error("safetensors: tensor '" + t.name + "' given twice");
    uint64_t expected = static_cast<uint64_t>(dtype_bytes(t.dtype));
    for (int64_t d : t.shape) {
      if (d < 0) throw Error("safetensors: tensor '" + t.name + "': negative dimension");
      expected *= static_cast<uint64_t>(d);
    }
    if (expected != t.bytes.size()) {
      throw Error("safetensors: tensor '" + t.name + "': shape " + shape_text(t.shape) + " of " +
                  std::string(dtype_name(t.dtype)) + " takes " + std::to_string(expected) +
                  " bytes, given " + std::to_string(t.bytes.size()));
    }
    header.order.push_back(&t);
  }
  // The reference's order: descending dtype alignment, then name.
  std::sort(header.order.begin(), header.order.end(), [](const TensorData* a, const TensorData* b) {
    if (a->dtype != b->dtype) return a->dtype > b->dtype;
    return a->name < b->name;
  });

  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [key, value] : metadata) m[key] = value;
    j["__metadata__"] = std::move(m);
  }
  uint64_t offset = 0;
  for (const TensorData* t : header.order) {
    nlohmann::ordered_json entry;
    entry["dtype"] = dtype_name(t->dtype);
    entry["shape"] = t->shape;
    entry["data_offsets"] = {offset, offset + t->bytes.size()};
    offset += t->bytes.size();
    j[t->name] = std::move(entry);
  }
  header.json = j.dump();
  header.json.resize((header.json.size() + 7) / 8 * 8, ' ');
  return header;
}

void write_file(const fs::path& path, std::span<const TensorData> tensors,
                const Metadata& metadata) {
  const Header header = make_header(tensors, metadata);
  model::write_file(path, [&](std::ostream& out) {
    std::array<char, 8> length{};
    for (int i = 0; i < 8; ++i)
      length[i] = static_cast<char>((header.json.size() >> (8 * i)) & 0xff);
    out.write(length.data(), length.size());
    out.write(header.json.data(), static_cast<std::streamsize>(header.json.size()));
    for (const TensorData* t : header.order) {
      out.write(reinterpret_cast<const char*>(t->bytes.data()),
                static_cast<std::streamsize>(t->bytes.size()));
    }
  });
}

std::vector<fs::path> write_checkpoint(const fs::path& dir, std::span<const TensorData> tensors,
                                       int64_t max_shard_bytes, const Metadata& metadata) {
  if (max_shard_bytes <= 0) throw Error("safetensors: max_shard_bytes must be positive");
  make_header(tensors, metadata);  // bad tensors throw here, before any old file is removed
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(dir, "cannot create directory: " + ec.message());
  std::vector<fs::path> stale;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const bool shard = name.starts_with("model-") && name.ends_with(".safetensors") &&
                       name.find("-of-") != std::string::npos;
    if (shard || name == kSingleFile || name == kIndexFile) stale.push_back(entry.path());
  }
  for (const fs::path& path : stale) fs::remove(path);

  uint64_t total_bytes = 0;
  for (const TensorData& t : tensors) total_bytes += t.bytes.size();
  if (total_bytes <= static_cast<uint64_t>(max_shard_bytes)) {
    write_file(dir / kSingleFile, tensors, metadata);
    return {dir / kSingleFile};
  }

  std::vector<const TensorData*> by_name;
  for (const TensorData& t : tensors) by_name.push_back(&t);
  std::sort(by_name.begin(), by_name.end(),
            [](const TensorData* a, const TensorData* b) { return a->name < b->name; });
  std::vector<std::vector<TensorData>> shards(1);
  uint64_t shard_bytes = 0;
  for (const TensorData* t : by_name) {
    if (!shards.back().empty() &&
        shard_bytes + t->bytes.size() > static_cast<uint64_t>(max_shard_bytes)) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(*t);
    shard_bytes += t->bytes.size();
  }

  json weight_map = json::object();
  std::vector<fs::path> written;
  for (size_t i = 0; i < shards.size(); ++i) {
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    write_file(dir / name, shards[i], metadata);
    for (const TensorData& t : shards[i]) weight_map[t.name] = name;
    written.push_back(dir / name);
  }
  const json index = {{"metadata", {{"total_size", total_bytes}}}, {"weight_map", weight_map}};
  model::write_text_file(dir / kIndexFile, index.dump(2) + "\n");
  written.push_back(dir / kIndexFile);
  return written;
}

}  // namespace megacut::executor::safetensors
