#!/usr/bin/env bash
# Compositions of Llama-3.2-1B and Qwen3-0.6B on the GPU at batch 1, 8 and 32 (P = 128): all
# conventional (one CUDA graph per stage), the same with Programmatic Dependent Launch and with
# cuBLASLt linears, one megakernel per stage, one megakernel per decoder layer (embedding and the
# head conventional), and that with PDL, and one tile region per stage (with PDL into it). Prints a Markdown table per model of TTFO and decode step
# p50 and each megakernel region's configuration as `megacut run` printed it, and writes them to
# OUT_DIR: bench-compositions.md, bench-compositions.json (one row per run: model, batch,
# composition (conv, mk, layers or tile), pdl, provider, ttfo_p50_ms, decode_p50_ms), and each run's
# measurement.json and log. Region kernels are compiled first, in parallel, into the kernel cache.
# Usage: scripts/bench-compositions.sh [MEGACUT_BINARY] [OUT_DIR]
#   MEGACUT_BENCH_MODELS (default "llama-3.2-1b qwen3-0.6b"), MEGACUT_BENCH_BATCHES ("1 8 32"),
#   MEGACUT_BENCH_RUNS (20).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
megacut=${1:-$root/build/gpu/app/megacut}
out=${2:-$root/build/bench-compositions}
read -r -a models <<< "${MEGACUT_BENCH_MODELS:-llama-3.2-1b qwen3-0.6b}"
read -r -a batches <<< "${MEGACUT_BENCH_BATCHES:-1 8 32}"
runs=${MEGACUT_BENCH_RUNS:-20}
mkdir -p "$out"

names=(conv conv-pdl conv-cublaslt mk layers layers-pdl tile)
declare -A flags=([conv]="" [conv-pdl]=--pdl [conv-cublaslt]="--provider cublaslt" [mk]=""
                  [layers]="" [layers-pdl]=--pdl [tile]=--pdl)

# One region per run of ops with the same decoder layer: mk for a layer, conv outside them.
layers_of() {
  local model=$1
  for stage in prefill decode; do
    "$megacut" graph --model "$model" --stage "$stage" --batch 1 \
      --json "$out/graph-$model-$stage.json" >/dev/null
  done
  python3 - "$out" "$model" <<'PY'
import json, os, sys
clauses = []
for stage in ("prefill", "decode"):
    regions = []  # [kind, begin, end, layer]
    path = os.path.join(sys.argv[1], f"graph-{sys.argv[2]}-{stage}.json")
    for op in json.load(open(path))["ops"]:
        if regions and regions[-1][3] == op["layer"]:
            regions[-1][2] = op["index"] + 1
        else:
            kind = "conv" if op["layer"] < 0 else "mk"
            regions.append([kind, op["index"], op["index"] + 1, op["layer"]])
    clauses.append(f"{stage}: " + " ".join(f"{k}[{b}:{e}]" for k, b, e, _ in regions))
print("; ".join(clauses))
PY
}

declare -A layers
for model in "${models[@]}"; do layers[$model]=$(layers_of "$model"); done
composition_of() {  # model name
  case $2 in
    conv*) echo conv ;;
    mk) echo mk ;;
    tile) echo tile ;;
    *) echo "${layers[$1]}" ;;
  esac
}

# Compile every region kernel once, all at the same time (one short run each, untimed).
pids=()
for model in "${models[@]}"; do
  for batch in "${batches[@]}"; do
    for name in mk layers; do
      "$megacut" run --model "$model" --batch "$batch" --prompt-len 128 --runs 1 --warmup 0 \
        --composition "$(composition_of "$model" "$name")" \
        >"$out/compile-$model-b$batch-$name.log" 2>&1 &
      pids+=($!)
    done
  done
done
for pid in "${pids[@]}"; do wait "$pid" || true; done

for model in "${models[@]}"; do
  for batch in "${batches[@]}"; do
    for name in "${names[@]}"; do
      echo "== $model batch $batch $name" >&2
      # shellcheck disable=SC2086  # flags is some words or none
      "$megacut" run --model "$model" --batch "$batch" --prompt-len 128 --runs "$runs" \
        --warmup 5 --composition "$(composition_of "$model" "$name")" ${flags[$name]} \
        --json "$out/run-$model-b$batch-$name.json" >"$out/run-$model-b$batch-$name.log" 2>&1 ||
        { tail -n 20 "$out/run-$model-b$batch-$name.log" >&2; exit 1; }
    done
  done
done

python3 - "$out" "$runs" "${models[*]}" "${batches[*]}" "${names[*]}" <<'PY' |
import json, os, sys
out, runs = sys.argv[1], sys.argv[2]
models, batches, names = sys.argv[3].split(), [int(b) for b in sys.argv[4].split()], sys.argv[5].split()
label = {"conv": "all conventional", "conv-pdl": "all conventional",
         "conv-cublaslt": "all conventional", "mk": "one mk per stage",
         "layers": "one mk per layer", "layers-pdl": "one mk per layer",
         "tile": "one tile region per stage"}
def path(model, batch, name, ext):
    return os.path.join(out, f"run-{model}-b{batch}-{name}.{ext}")
rows = []
for model in models:
    runs_by = {(b, n): json.load(open(path(model, b, n, "json"))) for b in batches for n in names}
    first = runs_by[(batches[0], names[0])]
    print(f"### {model}, P = 128, {first['device']}\n")
    print(f"`megacut run --model {model} --batch B --prompt-len 128 --runs {runs} --warmup 5 "
          "--composition C [--pdl] [--provider cublaslt]`, each stage one CUDA graph; p50 of "
          f"{runs} timed runs.\n")
    print("| batch | composition | PDL | linears | TTFO p50 (ms) | decode step p50 (ms) "
          "| TTFO / conv | step / conv | tokens/s |")
    print("|---:|---|---|---|---:|---:|---:|---:|---:|")
    for b in batches:
        conv = runs_by[(b, "conv")]
        for n in names:
            r = runs_by[(b, n)]
            rows.append({"model": model, "batch": b, "composition": n.split("-")[0],
                         "pdl": r["pdl"], "provider": r["provider"],
                         "ttfo_p50_ms": round(r["ttfo"]["p50"], 4),
                         "decode_p50_ms": round(r["decode_step"]["p50"], 4)})
            print(f"| {b} | {label[n]} | {'on' if r['pdl'] else 'off'} | {r['provider']} "
                  f"| {r['ttfo']['p50']:.3f} | {r['decode_step']['p50']:.3f} "
                  f"| {r['ttfo']['p50'] / conv['ttfo']['p50']:.2f} "
                  f"| {r['decode_step']['p50'] / conv['decode_step']['p50']:.2f} "
                  f"| {r['tokens_per_s']:.0f} |")
    print("\nMegakernel regions as `megacut run` reported them:\n")
    for b in batches:
        for n in ("mk", "layers"):
            with open(path(model, b, n, "log")) as log:
                lines = [l.rstrip() for l in log if l.startswith("region ")]
            if lines:
                print(f"batch {b}, {label[n]}:\n\n```")
                print("\n".join(lines))
                print("```\n")
with open(os.path.join(out, "bench-compositions.json"), "w") as f:
    json.dump(rows, f, indent=1)
    f.write("\n")
PY
  tee "$out/bench-compositions.md"
