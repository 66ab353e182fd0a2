#!/usr/bin/env bash
# Regenerates the golden files kept beside their tests (today: the small simulated Chrome
# trace, tests/golden/simulator_trace.json). Review the diff before committing it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MEGACUT_BUILD_DIR:-$root/build}/nocuda
cmake -S "$root" -B "$build" -G Ninja -DMEGACUT_CUDA=OFF >/dev/null
cmake --build "$build" --target simulator_test
MEGACUT_REGEN_GOLDEN=1 MEGACUT_CONFIGS="$root/configs" \
    "$build/tests/simulator_test" --gtest_filter='GoldenTraceTest.*'
git -C "$root" diff --stat -- tests/golden || true
