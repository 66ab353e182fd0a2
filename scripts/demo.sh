#!/usr/bin/env bash
# Sets up, builds megacut (no GPU needed) and runs the main job on the bundled default: the
# planner on the committed H200 profiles of Llama-3.2-1B, Qwen3-0.6B and the two streaming TTS
# pipelines (Qwen3-TTS-12Hz-0.6B, llama-hifigan-tts).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MEGACUT_BUILD_DIR:-$root/build}/nocuda

bash "$root/scripts/setup.sh"
cmake -S "$root" -B "$build" -G Ninja -DMEGACUT_CUDA=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target megacut >/dev/null
profiles=()
for model in llama-3.2-1b qwen3-0.6b qwen3-tts-12hz-0.6b llama-hifigan-tts; do
  profiles+=(--profile "$root/reports/h200/$model/profile.json")
done
# One plan command for all four, so the category legend prints once, after the last model.
"$build/app/megacut" plan "${profiles[@]}"
