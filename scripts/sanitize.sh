#!/usr/bin/env bash
# The megakernel and PDL GPU tests on the tiny configs, and the argmax and wide-block tile
# tests, under compute-sanitizer: racecheck (shared-memory hazards between the threads of a
# block), synccheck (barriers used wrongly) and memcheck (out-of-bounds and misaligned
# accesses). Writes each tool's full log and a summary of all to OUT_DIR; fails if a tool
# reports an error or a test fails. Slow: gpu-check runs it only when asked
# (MEGACUT_GPU_STEPS="... sanitize").
# Usage: scripts/sanitize.sh [BUILD_DIR] [OUT_DIR]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/gpu}
out=${2:-$root/build/sanitize}
mkdir -p "$out"

sanitizer=$(command -v compute-sanitizer || true)
[[ -z "$sanitizer" && -x /usr/local/cuda/bin/compute-sanitizer ]] &&
  sanitizer=/usr/local/cuda/bin/compute-sanitizer
if [[ -z "$sanitizer" ]]; then
  echo "compute-sanitizer not found (PATH, /usr/local/cuda/bin): sanitize skipped" |
    tee "$out/sanitize-summary.txt"
  exit 0
fi

export MEGACUT_CONFIGS=$root/configs
# The tiny-config cases only: Llama-3.2-1B under the sanitizer would take hours.
suites=("tests/gpu/megakernel_gpu_test:MegakernelGpu.*:-*Llama1b*"
        "tests/gpu/pdl_gpu_test:PdlGpu.Tiny*"
        "tests/gpu/gpu_kernels_test:Shapes/ArgmaxTest.*:WideBlock.*")
summary="$out/sanitize-summary.txt"
: >"$summary"
failed=0
for tool in racecheck synccheck memcheck; do
  for suite in "${suites[@]}"; do
    binary=$build/${suite%%:*}
    filter=${suite#*:}
    log="$out/sanitize-$tool-$(basename "$binary").log"
    echo "== $tool: $(basename "$binary") --gtest_filter=$filter"
    "$sanitizer" --tool "$tool" --error-exitcode 1 "$binary" --gtest_filter="$filter" >"$log" 2>&1
    status=$?
    {
      echo "$tool $(basename "$binary") ($filter): exit $status"
      grep -E "(RACECHECK|ERROR) SUMMARY|^\[  (PASSED|FAILED|SKIPPED) *\] [0-9]+ test" "$log" |
        sed 's/^/  /'
    } | tee -a "$summary"
    [[ $status -eq 0 ]] || failed=1
  done
done
exit $failed
