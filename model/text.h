// Small text helpers every module uses in messages and reports: comma-separated lists, printf
// into a string, percentages.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

namespace megacut::model {

// "1, 2, 4": numbers as std::to_string writes them, strings as they are.
template <class T>
std::string comma_list(const std::vector<T>& values) {
  std::string text;
  for (const T& v : values) {
    text += text.empty() ? "" : ", ";
    if constexpr (std::is_arithmetic_v<T>) {
      text += std::to_string(v);
    } else {
      text += v;
    }
  }
  return text;
}

// snprintf into a string (1023 characters at most): one line of output.
template <class... Args>
std::string printf_string(const char* format, Args... args) {
  char text[1024];
  std::snprintf(text, sizeof text, format, args...);
  return text;
}

// An integer in a message.
inline std::string str(int64_t v) { return std::to_string(v); }

// "12.5%" for 0.125.
inline std::string percent_text(double fraction) { return printf_string("%.1f%%", 100 * fraction); }

}  // namespace megacut::model
