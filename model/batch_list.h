// Batch sizes as the command line gives them (--batch 1,2,4,8), read by one parser so that every
// command accepts and refuses the same lists.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace megacut::model {

// The largest batch megacut models. Far above any batch a single GPU serves, and low enough
// that the sizes computed from it (tokens, tiles, bytes) stay well inside 64-bit integers;
// make_scenario bounds the tokens a batch makes on top of this (kMaxTokens, model/scenario.h).
inline constexpr int64_t kMaxBatch = int64_t{1} << 16;

// "1,2,4,8": positive integers of at most kMaxBatch, each once, in increasing order whatever
// order they were listed in. Throws an Error naming `option` and the bad item otherwise; an
// empty list is refused rather than read as "every batch".
std::vector<int64_t> parse_batch_list(std::string_view text, std::string_view option = "--batch");
// One batch size, read as a list of one.
int64_t parse_batch(std::string_view text, std::string_view option = "--batch");

}  // namespace megacut::model
