#!/usr/bin/env bash
# Conventional execution of Llama-3.2-1B on the GPU at batch 1, 8 and 32 (P = 128), with both
# linear providers: TTFO and decode step p50 next to the weight-streaming floor (weight bytes /
# measured copy bandwidth), with achieved GB/s and TFLOP/s. Prints a Markdown table and writes
# it, with each run's measurement.json, to OUT_DIR, and the table's rows as
# bench-conventional.json (model, batch, provider, ttfo_p50_ms, decode_p50_ms).
# Usage: scripts/bench-conventional.sh [MEGACUT_BINARY] [OUT_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
megacut=${1:-$root/build/gpu/app/megacut}
out=${2:-$root/build/bench-conventional}
model=${MEGACUT_BENCH_MODEL:-llama-3.2-1b}
mkdir -p "$out"

for provider in ours cublaslt; do
  for batch in 1 8 32; do
    "$megacut" run --model "$model" --batch "$batch" --prompt-len 128 --provider "$provider" \
      --runs 100 --warmup 10 --json "$out/run-$model-b$batch-$provider.json" >&2
  done
done

python3 - "$out" "$model" <<'PY' | tee "$out/bench-conventional.md"
import glob, json, os, sys
out, model = sys.argv[1], sys.argv[2]
runs = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(out, f"run-{model}-b*.json")))]
runs.sort(key=lambda r: (r["provider"], r["batch"]))
print(f"### {model}, all-conventional (one CUDA graph per stage), P = 128, {runs[0]['device']}\n")
print("| provider | batch | TTFO p50 (ms) | prefill TFLOP/s | decode step p50 (ms) "
      "| decode GB/s | weight floor (ms) | step / floor | tokens/s |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in runs:
    ttfo_s = r["ttfo"]["p50"] / 1e3
    step_s = r["decode_step"]["p50"] / 1e3
    decode_bytes = r["decode_cost"]["bytes_read"] + r["decode_cost"]["bytes_written"]
    floor_s = r["weight_bytes"] / r["copy_bytes_per_s"]
    print(f"| {r['provider']} | {r['batch']} | {ttfo_s * 1e3:.3f} "
          f"| {r['prefill_cost']['flops'] / ttfo_s / 1e12:.1f} | {step_s * 1e3:.3f} "
          f"| {decode_bytes / step_s / 1e9:.0f} | {floor_s * 1e3:.3f} | {step_s / floor_s:.2f} "
          f"| {r['tokens_per_s']:.0f} |")
json.dump([{"model": model, "batch": r["batch"], "provider": r["provider"],
            "ttfo_p50_ms": r["ttfo"]["p50"], "decode_p50_ms": r["decode_step"]["p50"]}
           for r in runs], open(os.path.join(out, "bench-conventional.json"), "w"), indent=1)
print(f"\nCopy bandwidth measured: {runs[0]['copy_bytes_per_s'] / 1e12:.2f} TB/s (read + write). "
      "Decode GB/s counts every byte the tiles must move (model::TileCost).")
PY
