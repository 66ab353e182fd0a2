// Human-readable numbers for terminal output: sizes, counts, FLOPs.
#pragma once

#include <cstdint>
#include <string>

namespace megacut::app {

std::string format_bytes(double bytes);   // "2.47 GB" (decimal units)
std::string format_flops(double flops);   // "2.47 GFLOP"
std::string format_count(int64_t count);  // "1,235,814,400"

}  // namespace megacut::app
