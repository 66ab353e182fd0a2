#include "app/format.h"

#include <array>
#include <cstdio>

namespace megacut::app {
namespace {

std::string scaled(double value, const char* unit) {
  static constexpr std::array<const char*, 6> kPrefix = {"", "k", "M", "G", "T", "P"};
  size_t i = 0;
  while (value >= 1000.0 && i + 1 < kPrefix.size()) {
    value /= 1000.0;
    ++i;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, i == 0 ? "%.0f %s%s" : "%.2f %s%s", value, kPrefix[i], unit);
  return buffer;
}

}  // namespace

std::string format_bytes(double bytes) { return scaled(bytes, "B"); }

std::string format_flops(double flops) { return scaled(flops, "FLOP"); }

std::string format_count(int64_t count) {
  std::string digits = std::to_string(count < 0 ? -count : count);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return count < 0 ? "-" + out : out;
}

}  // namespace megacut::app
