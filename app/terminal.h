// Lines for the log, and one progress line kept at the bottom while stdout is a terminal: a
// long GPU sweep shows where it is without filling a log file with progress.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <string>

#include "model/text.h"

namespace megacut::app {

using model::printf_string;

class Terminal {
 public:
  Terminal() : live_(isatty(fileno(stdout)) != 0) {}
  ~Terminal() { clear(); }
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  void line(const std::string& text) {
    clear();
    std::printf("%s\n", text.c_str());
    std::fflush(stdout);
  }
  void progress(const std::string& text) {
    if (!live_) return;
    std::printf("\r\033[K%s", text.c_str());
    std::fflush(stdout);
    shown_ = true;
  }
  void clear() {
    if (!shown_) return;
    std::printf("\r\033[K");
    std::fflush(stdout);
    shown_ = false;
  }

 private:
  bool live_;
  bool shown_ = false;
};

}  // namespace megacut::app
