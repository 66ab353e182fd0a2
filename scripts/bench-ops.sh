#!/usr/bin/env bash
# Each op kind's conventional kernel alone (executor/bench/bench_ops) at the shapes of
# Llama-3.2-1B and Qwen3-0.6B at batch 1, 8 and 32 (P = 128), ours and cuBLASLt side by side, each
# linear also re-tiled to every tile width (--widths). Writes to OUT_DIR: bench-ops.txt (the
# tables as bench_ops printed them) and bench-ops.json (one row per linear or lm-head timed:
# model, batch, stage, op, m, n, k, provider, tile_cols, tile_body, us, tflops), and prints the
# prefill linears, ours against cuBLASLt, as a Markdown table.
# Usage: scripts/bench-ops.sh [BENCH_OPS_BINARY] [OUT_DIR]
#   MEGACUT_BENCH_MODELS (default "llama-3.2-1b qwen3-0.6b"), MEGACUT_BENCH_BATCHES ("1 8 32").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bench=${1:-$root/build/gpu/executor/bench_ops}
out=${2:-$root/build/bench-ops}
read -r -a models <<< "${MEGACUT_BENCH_MODELS:-llama-3.2-1b qwen3-0.6b}"
read -r -a batches <<< "${MEGACUT_BENCH_BATCHES:-1 8 32}"
mkdir -p "$out"

: >"$out/bench-ops.txt"
for model in "${models[@]}"; do
  for batch in "${batches[@]}"; do
    echo "== $model batch $batch" >&2
    "$bench" "$model" 128 "$batch" --widths --json "$out/bench-ops-$model-b$batch.json" \
      | tee -a "$out/bench-ops.txt" >&2
    echo >>"$out/bench-ops.txt"
  done
done

python3 - "$out" "${models[@]}" <<'PY' | tee "$out/bench-ops.md"
import json, os, sys
out, models = sys.argv[1], sys.argv[2:]
rows = []
for name in sorted(os.listdir(out)):
    if name.startswith("bench-ops-") and name.endswith(".json"):
        rows += json.load(open(os.path.join(out, name)))
json.dump(rows, open(os.path.join(out, "bench-ops.json"), "w"), indent=1)
print("| model | batch | op | m | n | k | ours: tile body | ours (µs) | TFLOP/s | best width "
      "(µs) | cuBLASLt (µs) | TFLOP/s | ours: speed of cuBLASLt |")
print("|---|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
for model in models:
    mine = [r for r in rows if r["model"] == model and r["stage"] == "prefill"]
    for batch in sorted({r["batch"] for r in mine}):
        at = [r for r in mine if r["batch"] == batch]
        for op in dict.fromkeys(r["op"] for r in at):
            ours = [r for r in at if r["op"] == op and r["provider"] == "ours"]
            lt = [r for r in at if r["op"] == op and r["provider"] == "cublaslt"]
            if not ours or not lt:
                continue
            graph, best = ours[0], min(ours, key=lambda r: r["us"])
            print(f"| {model} | {batch} | {op} | {graph['m']} | {graph['n']} | {graph['k']} "
                  f"| {graph['tile_body']} | {graph['us']:.2f} | {graph['tflops']:.0f} "
                  f"| {best['tile_cols']}: {best['us']:.2f} | {lt[0]['us']:.2f} "
                  f"| {lt[0]['tflops']:.0f} | {lt[0]['us'] / graph['us']:.2f} |")
PY
