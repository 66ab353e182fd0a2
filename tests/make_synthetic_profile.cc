// Writes a synthetic profile (tests/support/synthetic_profile.h) for command-line tests and
// demos without a GPU: make_synthetic_profile MODEL BATCHES PROMPT_LEN OUT.json [TP], BATCHES
// like 1,2,4, TP a tensor-parallel degree (default 1). Its numbers are assumptions, not
// measurements.
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

#include "model/error.h"
#include "tests/support/synthetic_profile.h"

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    std::fprintf(stderr, "usage: %s MODEL BATCHES PROMPT_LEN OUT.json [TP]\n", argv[0]);
    return 2;
  }
  try {
    std::vector<int64_t> batches;
    std::stringstream list(argv[2]);
    for (std::string item; std::getline(list, item, ',');) batches.push_back(std::stoll(item));
    megacut::testing::SyntheticDevice device;
    if (argc == 6) device.tp = std::stoll(argv[5]);
    const auto profile =
        megacut::testing::synthetic_profile(argv[1], batches, std::stoll(argv[3]), device);
    megacut::model::write_profile(profile, argv[4]);
  } catch (const std::exception& e) {
    std::cerr << "make_synthetic_profile: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
