#!/usr/bin/env bash
# Time to first audio of a streaming TTS pipeline on the GPU at batch 1 and 32 (the prompt
# length and frames per chunk of the profile): all conventional, one megakernel per stage, and
# the planner's best (what `megacut plan` settles on from the profile, with PDL where it chose
# it). Prints a Markdown
# table of TTFA p50 and p95, the streaming step p50, and the gain of the planner's best over
# each baseline, and writes it, the plan and each run's measurement.json and log, to OUT_DIR.
# Usage: scripts/bench-tts.sh MODEL PROFILE [MEGACUT_BINARY] [OUT_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model=$1
profile=$2
megacut=${3:-$root/build/gpu/app/megacut}
out=${4:-$root/build/bench-tts}
runs=${MEGACUT_BENCH_RUNS:-20}
batches=(1 32)
mkdir -p "$out"
# The scenario the profile measured: its prompt length and frames per chunk.
read -r prompt frames < <(python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))
print(p["prompt_len"], p.get("frames", 0))' "$profile")
(( frames > 0 )) || { echo "$profile: not a profile of a TTS pipeline (no frames)" >&2; exit 2; }

"$megacut" plan --profile "$profile" --batch 1,32 --json "$out/plan-$model.json" \
  >"$out/plan-$model.log"
names=(conv mk best)
declare -A composition=([conv]=conv [mk]=mk [best]="$out/plan-$model.json")

for batch in "${batches[@]}"; do
  for name in "${names[@]}"; do
    "$megacut" run --model "$model" --batch "$batch" --prompt-len "$prompt" --frames "$frames" \
      --runs "$runs" --warmup 3 --composition "${composition[$name]}" \
      --json "$out/run-$model-b$batch-$name.json" >"$out/run-$model-b$batch-$name.log" 2>&1 ||
      { tail -n 20 "$out/run-$model-b$batch-$name.log" >&2; exit 1; }
  done
done

python3 - "$out" "$model" "$runs" "${batches[*]}" "$prompt" <<'PY' | tee "$out/bench-tts-$model.md"
import json, os, sys
out, model, runs, prompt = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[5]
batches = [int(b) for b in sys.argv[4].split()]
label = {"conv": "all conventional", "mk": "one mk per stage", "best": "planner's best"}
def run(b, n):
    return json.load(open(os.path.join(out, f"run-{model}-b{b}-{n}.json")))
first = run(batches[0], "conv")
print(f"### {model}, time to first audio, P = {prompt}, {first['frames']} frames, "
      f"{first['device']}\n")
print(f"`megacut run --model {model} --batch B --prompt-len {prompt} --frames {first['frames']} "
      f"--runs {runs} --warmup 3 "
      "--composition C` (C: conv, mk, or the plan of `megacut plan --profile PROFILE`); p50 and "
      f"p95 of {runs} timed runs.\n")
print("| batch | composition | PDL | TTFA p50 (ms) | TTFA p95 (ms) | step p50 (ms) "
      "| audio s / s | best's TTFA gain |")
print("|---:|---|---|---:|---:|---:|---:|---:|")
for b in batches:
    best = run(b, "best")
    for n in ("conv", "mk", "best"):
        r = run(b, n)
        gain = "" if n == "best" else f"{r['ttfo']['p50'] / best['ttfo']['p50']:.3f}x"
        print(f"| {b} | {label[n]} | {'on' if r['pdl'] else 'off'} | {r['ttfo']['p50']:.3f} "
              f"| {r['ttfo']['p95']:.3f} | {r['decode_step']['p50']:.3f} "
              f"| {r['outputs_per_s']:.1f} | {gain} |")
print()
for b in batches:
    print(f"batch {b}, planner's best: `{run(b, 'best')['composition']}`")
PY
