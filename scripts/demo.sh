#!/usr/bin/env bash
# Sets up, builds megacut (no GPU needed) and runs the main job on the bundled default:
# Llama-3.2-1B's decode graph with its tiles, bytes and FLOPs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MEGACUT_BUILD_DIR:-$root/build}/nocuda

bash "$root/scripts/setup.sh"
cmake -S "$root" -B "$build" -G Ninja -DMEGACUT_CUDA=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target megacut >/dev/null
"$build/app/megacut" graph --model llama-3.2-1b --stage decode --batch 1
