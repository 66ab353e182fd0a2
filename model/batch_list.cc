#include "model/batch_list.h"

#include <algorithm>
#include <charconv>
#include <string>

#include "model/error.h"

namespace megacut::model {

std::vector<int64_t> parse_batch_list(std::string_view text, std::string_view option_view) {
  const std::string option(option_view);
  if (text.empty()) throw Error(option + ": empty list (expected a list like 1,2,4,8)");
  std::vector<int64_t> out;
  size_t from = 0;
  for (;;) {
    const size_t comma = text.find(',', from);
    const std::string_view item =
        text.substr(from, comma == std::string_view::npos ? text.npos : comma - from);
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    // Whether the whole item is an integer, within 64 bits or not: a negative one beyond them
    // is not too large but not positive.
    const bool integer = !item.empty() && end == item.data() + item.size() &&
                         (ec == std::errc() || ec == std::errc::result_out_of_range);
    if (integer && item.front() != '-' &&
        (ec == std::errc::result_out_of_range || value > kMaxBatch)) {
      throw Error(option + ": " + std::string(item) + " in '" + std::string(text) +
                  "' is larger than the largest batch megacut models (" +
                  std::to_string(kMaxBatch) + ")");
    }
    if (!integer || ec != std::errc() || value <= 0) {
      throw Error(option + ": '" + std::string(item) + "' in '" + std::string(text) +
                  "' is not a positive integer (expected a list like 1,2,4,8)");
    }
    if (std::find(out.begin(), out.end(), value) != out.end()) {
      throw Error(option + ": " + std::to_string(value) + " is listed twice in '" +
                  std::string(text) + "'");
    }
    out.push_back(value);
    if (comma == std::string_view::npos) break;
    from = comma + 1;
  }
  std::sort(out.begin(), out.end());
  return out;
}

int64_t parse_batch(std::string_view text, std::string_view option) {
  const std::vector<int64_t> batches = parse_batch_list(text, option);
  if (batches.size() != 1) {
    throw Error(std::string(option) + ": one batch size, not a list ('" + std::string(text) + "')");
  }
  return batches.front();
}

}  // namespace megacut::model
