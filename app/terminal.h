// Lines for the log, and one progress line kept at the bottom while the stream is a terminal: a
// long sweep or search shows where it is without filling a log file with progress. The one
// progress line of every command.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>

#include "model/text.h"

namespace megacut::app {

using model::printf_string;

// "[#########.....................]  30%": a bar of `width` characters for `fraction` in [0, 1].
inline std::string progress_bar(double fraction, int width = 30) {
  const double f = fraction < 0 ? 0 : fraction > 1 ? 1 : fraction;
  const int filled = static_cast<int>(f * width);
  return "[" + std::string(filled, '#') + std::string(width - filled, '.') + "] " +
         printf_string("%3.0f%%", 100 * f);
}

// Safe to call from several threads (the planner reports from its workers). Progress is shown at
// most every 100 ms; a line clears it first.
class Terminal {
 public:
  explicit Terminal(std::FILE* stream = stdout)
      : stream_(stream), live_(isatty(fileno(stream)) != 0) {}
  ~Terminal() { clear(); }
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  void line(const std::string& text) {
    std::lock_guard lock(mutex_);
    clear_locked();
    std::fprintf(stream_, "%s\n", text.c_str());
    std::fflush(stream_);
  }
  void progress(const std::string& text) {
    if (!live_) return;
    std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (shown_ && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    std::fprintf(stream_, "\r\033[K%s", text.c_str());
    std::fflush(stream_);
    shown_ = true;
  }
  void clear() {
    std::lock_guard lock(mutex_);
    clear_locked();
  }
  // Whether progress is shown at all (the stream is a terminal).
  bool live() const { return live_; }
  // Seconds since the terminal was made.
  double elapsed_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  void clear_locked() {
    if (!shown_) return;
    std::fprintf(stream_, "\r\033[K");
    std::fflush(stream_);
    shown_ = false;
  }

  std::FILE* stream_;
  bool live_;
  bool shown_ = false;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace megacut::app
