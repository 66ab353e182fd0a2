// Human-readable numbers for terminal output: sizes, counts, FLOPs, durations.
#pragma once

#include <cstdint>
#include <string>

namespace megacut::app {

std::string format_bytes(double bytes);   // "2.47 GB" (decimal units)
std::string format_flops(double flops);   // "2.47 GFLOP"
std::string format_count(int64_t count);  // "1,235,814,400"
// A rate of outputs (tokens or seconds of audio) per second: "12,345", "58.27".
std::string format_rate(double per_s);
std::string format_ns(int64_t ns);  // "3.828 ms", "21.65 µs", "96 ns"
// Right-aligns `text` in `width` columns, counting UTF-8 characters (µ is two bytes).
std::string right_align(const std::string& text, size_t width);

}  // namespace megacut::app
