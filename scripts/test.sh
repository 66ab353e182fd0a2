#!/usr/bin/env bash
# Sets up, builds and runs every test: the no-CUDA build (model, simulator, planner, CLI must
# not need the toolkit), the full build where a CUDA compiler is found (GPU tests skip cleanly
# without a GPU), the clang-format check, and a short run of each parser fuzzer under clang.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MEGACUT_BUILD_DIR:-$root/build}
jobs=$(nproc)

bash "$root/scripts/setup.sh"

echo "== build without CUDA ($build/nocuda)"
cmake -S "$root" -B "$build/nocuda" -G Ninja -DMEGACUT_CUDA=OFF >/dev/null
cmake --build "$build/nocuda" -j "$jobs"
(cd "$build/nocuda" && ctest --output-on-failure -j "$jobs")

if command -v nvcc >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo "== build with CUDA ($build/cuda)"
  cmake -S "$root" -B "$build/cuda" -G Ninja -DMEGACUT_CUDA=ON \
        -DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" >/dev/null
  cmake --build "$build/cuda" -j "$jobs"
  (cd "$build/cuda" && ctest --output-on-failure -j "$jobs")
else
  echo "== no CUDA compiler: the CUDA build is skipped"
fi

if command -v clang++ >/dev/null 2>&1; then
  echo "== fuzz the parsers ($build/fuzz)"
  cmake -S "$root" -B "$build/fuzz" -G Ninja -DMEGACUT_CUDA=OFF -DMEGACUT_FUZZ=ON \
        -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined" >/dev/null
  cmake --build "$build/fuzz" -j "$jobs" --target fuzz_config fuzz_composition fuzz_profile
  # A profile's seed is a whole synthetic profile (60 KB): it needs longer inputs.
  declare -A max_len=([fuzz_config]=4096 [fuzz_composition]=4096 [fuzz_profile]=131072)
  for target in fuzz_config fuzz_composition fuzz_profile; do
    corpus=$(mktemp -d)
    "$build/fuzz/tests/fuzz/$target" -max_total_time="${MEGACUT_FUZZ_SECONDS:-20}" \
        -max_len="${max_len[$target]}" "$corpus" "$root/tests/fuzz/corpus/${target#fuzz_}" \
        2>&1 | tail -n 2
    rm -rf "$corpus"
  done
else
  echo "== no clang++: the fuzzers are skipped"
fi
