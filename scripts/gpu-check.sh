#!/usr/bin/env bash
# On the GPU machine: configure, build, run every GPU test and the benchmarks, write logs and
# JSON under OUT_DIR (first argument, else $OUT, else build/gpu-check), and print a short
# summary table last. Steps named in MEGACUT_GPU_STEPS (space-separated) run alone; the slow
# compute-sanitizer step runs only when named there (e.g. "configure build sanitize").
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-${OUT:-$root/build/gpu-check}}
build=${MEGACUT_BUILD_DIR:-$root/build}/gpu
mkdir -p "$out"
cd "$root"

summary=()
failed=0

# step NAME COMMAND...: runs COMMAND with its output in $out/NAME.log, records status and time.
step() {
  local name=$1
  shift
  if [[ -n "${MEGACUT_GPU_STEPS:-}" && " $MEGACUT_GPU_STEPS " != *" $name "* ]]; then return; fi
  local start=$SECONDS
  echo "== $name: $*"
  if "$@" >"$out/$name.log" 2>&1; then
    summary+=("$(printf '%-28s ok     %5ss  %s' "$name" $((SECONDS - start)) "$(tail -n 1 "$out/$name.log" | cut -c1-80)")")
  else
    summary+=("$(printf '%-28s FAIL   %5ss  %s' "$name" $((SECONDS - start)) "$(tail -n 1 "$out/$name.log" | cut -c1-80)")")
    failed=1
    tail -n 30 "$out/$name.log"
  fi
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem \
  --format=csv >"$out/nvidia-smi.csv" 2>&1

step configure cmake -S "$root" -B "$build" -G Ninja -DMEGACUT_CUDA=ON -DCMAKE_BUILD_TYPE=Release
step build cmake --build "$build" -j "$(nproc)"
# GPU tests one at a time: they share one device, and timing-sensitive ones must not overlap.
step ctest ctest --test-dir "$build" --output-on-failure -j 1
step bench-ops bash "$root/scripts/bench-ops.sh" "$build/executor/bench_ops" "$out"
if [[ -x "$build/app/megacut" ]] && "$build/app/megacut" run --help >/dev/null 2>&1; then
  step bench-conventional bash "$root/scripts/bench-conventional.sh" "$build/app/megacut" "$out"
  step bench-compositions bash "$root/scripts/bench-compositions.sh" "$build/app/megacut" "$out"
  for model in qwen3-tts-12hz-0.6b llama-hifigan-tts; do
    profile=$root/reports/h200/$model/profile.json
    [[ -f $profile ]] && step "bench-tts-$model" bash "$root/scripts/bench-tts.sh" "$model" \
      "$profile" "$build/app/megacut" "$out/bench-tts"
  done
  for model in llama-3.2-1b qwen3-0.6b; do
    step "transformers-$model" python3 "$root/scripts/check_against_transformers.py" \
      --megacut "$build/app/megacut" --model "$model" --batch 8 --steps 16 \
      --out "$out/check-$model.json"
  done
fi

# compute-sanitizer takes long: only when MEGACUT_GPU_STEPS names it.
if [[ " ${MEGACUT_GPU_STEPS:-} " == *" sanitize "* ]]; then
  step sanitize bash "$root/scripts/sanitize.sh" "$build" "$out"
fi

echo
echo "== summary ($(date -u +%FT%TZ), $(head -n 2 "$out/nvidia-smi.csv" | tail -n 1))"
grep -E "tests passed|tests failed" "$out/ctest.log" 2>/dev/null | tail -n 1
printf '%s\n' "${summary[@]}"
exit $failed
