#include "app/format.h"

#include <array>
#include <cmath>
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

std::string format_rate(double per_s) {
  if (per_s >= 100) return format_count(static_cast<int64_t>(std::llround(per_s)));
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", per_s);
  return text;
}

std::string format_count(int64_t count) {
  std::string digits = std::to_string(count < 0 ? -count : count);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return count < 0 ? "-" + out : out;
}

std::string format_ns(int64_t ns) {
  char text[32];
  const double v = static_cast<double>(ns);
  if (ns >= 1'000'000) {
    std::snprintf(text, sizeof text, "%.3f ms", v / 1e6);
  } else if (ns >= 1'000) {
    std::snprintf(text, sizeof text, "%.2f µs", v / 1e3);
  } else {
    std::snprintf(text, sizeof text, "%lld ns", static_cast<long long>(ns));
  }
  return text;
}

std::string right_align(const std::string& text, size_t width) {
  size_t columns = 0;
  for (unsigned char c : text) columns += (c & 0xC0) != 0x80;
  return std::string(width > columns ? width - columns : 0, ' ') + text;
}

}  // namespace megacut::app
