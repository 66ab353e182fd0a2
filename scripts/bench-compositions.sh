#!/usr/bin/env bash
# Compositions of Llama-3.2-1B on the GPU at batch 1, 8 and 32 (P = 128): all conventional (one
# CUDA graph per stage), the same with Programmatic Dependent Launch, one megakernel per stage,
# one megakernel per decoder layer (embedding and the head conventional), and that with PDL.
# Prints a Markdown table of TTFO and decode step p50 and each megakernel region's
# configuration as `megacut run` printed it, and writes them, with each run's measurement.json
# and log, to OUT_DIR. Region kernels are compiled first, in parallel, into the kernel cache.
# Usage: scripts/bench-compositions.sh [MEGACUT_BINARY] [OUT_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
megacut=${1:-$root/build/gpu/app/megacut}
out=${2:-$root/build/bench-compositions}
model=${MEGACUT_BENCH_MODEL:-llama-3.2-1b}
runs=${MEGACUT_BENCH_RUNS:-20}
batches=(1 8 32)
mkdir -p "$out"

# One region per run of ops with the same decoder layer: mk for a layer, conv outside them.
for stage in prefill decode; do
  "$megacut" graph --model "$model" --stage "$stage" --batch 1 --json "$out/graph-$stage.json" \
    >/dev/null
done
layers=$(python3 - "$out" <<'PY'
import json, os, sys
clauses = []
for stage in ("prefill", "decode"):
    regions = []  # [kind, begin, end, layer]
    for op in json.load(open(os.path.join(sys.argv[1], f"graph-{stage}.json")))["ops"]:
        if regions and regions[-1][3] == op["layer"]:
            regions[-1][2] = op["index"] + 1
        else:
            kind = "conv" if op["layer"] < 0 else "mk"
            regions.append([kind, op["index"], op["index"] + 1, op["layer"]])
    clauses.append(f"{stage}: " + " ".join(f"{k}[{b}:{e}]" for k, b, e, _ in regions))
print("; ".join(clauses))
PY
)

names=(conv conv-pdl mk layers layers-pdl)
declare -A composition=([conv]=conv [conv-pdl]=conv [mk]=mk [layers]="$layers"
                        [layers-pdl]="$layers")
declare -A flags=([conv]="" [conv-pdl]=--pdl [mk]="" [layers]="" [layers-pdl]=--pdl)

# Compile every region kernel once, all at the same time (one short run each, untimed).
pids=()
for batch in "${batches[@]}"; do
  for name in mk layers; do
    "$megacut" run --model "$model" --batch "$batch" --prompt-len 128 --runs 1 --warmup 0 \
      --composition "${composition[$name]}" >"$out/compile-b$batch-$name.log" 2>&1 &
    pids+=($!)
  done
done
for pid in "${pids[@]}"; do wait "$pid" || true; done

for batch in "${batches[@]}"; do
  for name in "${names[@]}"; do
    # shellcheck disable=SC2086  # flags is one word or none
    "$megacut" run --model "$model" --batch "$batch" --prompt-len 128 --runs "$runs" \
      --warmup 5 --composition "${composition[$name]}" ${flags[$name]} \
      --json "$out/run-$model-b$batch-$name.json" >"$out/run-$model-b$batch-$name.log" 2>&1 ||
      { tail -n 20 "$out/run-$model-b$batch-$name.log" >&2; exit 1; }
  done
done

table=$out/bench-compositions.md
python3 - "$out" "$model" "$runs" "${batches[*]}" "${names[*]}" "$layers" <<'PY' | tee "$table"
import json, os, sys
out, model, runs, layers = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[6]
batches, names = [int(b) for b in sys.argv[4].split()], sys.argv[5].split()
label = {"conv": "all conventional", "conv-pdl": "all conventional", "mk": "one mk per stage",
         "layers": "one mk per layer", "layers-pdl": "one mk per layer"}
def path(batch, name, ext):
    return os.path.join(out, f"run-{model}-b{batch}-{name}.{ext}")
runs_by = {(b, n): json.load(open(path(b, n, "json"))) for b in batches for n in names}
first = runs_by[(batches[0], names[0])]
print(f"### {model}, compositions, P = 128, {first['device']}\n")
print(f"`megacut run --model {model} --batch B --prompt-len 128 --runs {runs} --warmup 5 "
      "--composition C [--pdl]`, linear provider ours, each stage one CUDA graph; p50 of "
      f"{runs} timed runs.\n")
print("| batch | composition | PDL | TTFO p50 (ms) | decode step p50 (ms) | TTFO / conv "
      "| step / conv | tokens/s |")
print("|---:|---|---|---:|---:|---:|---:|---:|")
for b in batches:
    conv = runs_by[(b, "conv")]
    for n in names:
        r = runs_by[(b, n)]
        print(f"| {b} | {label[n]} | {'on' if r['pdl'] else 'off'} | {r['ttfo']['p50']:.3f} "
              f"| {r['decode_step']['p50']:.3f} | {r['ttfo']['p50'] / conv['ttfo']['p50']:.2f} "
              f"| {r['decode_step']['p50'] / conv['decode_step']['p50']:.2f} "
              f"| {r['tokens_per_s']:.0f} |")
print(f"\nOne mk per layer: `{layers}`.\n")
print("Megakernel regions as `megacut run` reported them:\n")
for b in batches:
    for n in names:
        if n.endswith("-pdl"):
            continue  # the same kernels as without PDL
        with open(path(b, n, "log")) as log:
            lines = [l.rstrip() for l in log if l.startswith("region ")]
        if lines:
            print(f"batch {b}, {label[n]}:\n\n```")
            print("\n".join(lines))
            print("```\n")
steps = ", ".join(f"{n} {runs_by[(batches[0], n)]['decode_step']['p50']:.3f}" for n in names)
print(f"Decode step p50 at batch {batches[0]} (ms): {steps}")
PY
