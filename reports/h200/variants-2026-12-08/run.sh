#!/usr/bin/env bash
# On the GPU machine, from the root of a checkout of main at 305392c: time the decode-step
# variants of this folder against main's tree, each a patch of the headers that mk regions
# compile with NVRTC (scripts/nvrtc-variants.sh), with main's megacut binary.
#
#   bash reports/h200/variants-2026-12-08/run.sh MEGACUT OUT_DIR [SET]
#
# SET "a" (default): every patch, Qwen3-0.6B and Llama-3.2-1B at batch 1, two rounds.
# SET "b": the candidates and the in-flight bounds at batch 8, two rounds.
# SET "c": task timing of Qwen3-0.6B's decode step at batch 1 with the phase stamps of
# reports/h100/task-timing-2026-12-07/phase-stamps.patch, over main's tree and with
# poll-stop-overlap: OUT_DIR/tt-qwen3-0.6b-b1-NAME.json.gz, for scripts/task-timing-hops.py
# (STAMPS names the stamps' patch where reports/h100 is not in the tree).
# SET "d": a build of another commit against MEGACUT and this tree, in turns, three rounds, at
# batch 1 and 8: BRANCH_MEGACUT its megacut, BRANCH_TREE a tree of its tracked files (its mk
# regions compile from there).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
megacut=$(realpath "$1")
out=$2
set_name=${3:-a}
mkdir -p "$out"
cd "$root"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total,driver_version \
  --format=csv,noheader | tee "$out/gpu.txt"
export MEGACUT_CACHE_DIR=${MEGACUT_CACHE_DIR:-/tmp/megacut-variants-cache}

case $set_name in
  a)
    patches=(candidates poll-stop-overlap counter-stop-overlap argmax-tree attention-ex2
             head-uncapped nostream noproducts cap2 cap4 cap6)
    shapes=("qwen3-0.6b 1" "llama-3.2-1b 1")
    ;;
  b)
    patches=(candidates poll-stop-overlap head-uncapped cap2 cap4)
    shapes=("qwen3-0.6b 8" "llama-3.2-1b 8")
    ;;
  c)
    # STAMPS: the stamps' patch where reports/h100 is not in the tree (moved out for its size).
    stamps=$(realpath "${STAMPS:-$root/reports/h100/task-timing-2026-12-07/phase-stamps.patch}")
    [[ -f $stamps ]] || { echo "run.sh: no phase-stamps patch at $stamps (set STAMPS)" >&2; exit 2; }
    for name in main poll-stop-overlap; do
      tree=$(mktemp -d)
      git ls-files -z | while IFS= read -r -d '' f; do
        [[ -e $f ]] && printf '%s\0' "$f"
      done | xargs -0 cp --parents -t "$tree"
      (cd "$tree" && git apply "$stamps") || exit 1
      if [[ $name != main ]]; then (cd "$tree" && git apply "$here/$name.patch") || exit 1; fi
      MEGACUT_SOURCE_DIR=$tree "$megacut" run --model qwen3-0.6b --batch 1 --prompt-len 128 \
        --composition 'decode: mk' --runs 5 --warmup 2 \
        --task-timing "$out/tt-qwen3-0.6b-b1-$name.json" 2>&1 | tee "$out/tt-$name.log" | tail -n 3
      gzip -f "$out/tt-qwen3-0.6b-b1-$name.json"
      rm -rf "$tree"
    done
    exit 0
    ;;
  d)
    branch=$(realpath "${BRANCH_MEGACUT:?SET d needs BRANCH_MEGACUT}")
    tree=$(realpath "${BRANCH_TREE:?SET d needs BRANCH_TREE}")
    for shape in "qwen3-0.6b 1" "llama-3.2-1b 1" "llama-3.2-1b 8" "qwen3-0.6b 8"; do
      read -r model batch <<<"$shape"
      for round in 1 2 3; do
        for side in main branch; do
          if [[ $side == main ]]; then bin=$megacut src=$root; else bin=$branch src=$tree; fi
          line=$(MEGACUT_SOURCE_DIR=$src "$bin" run --model "$model" --batch "$batch" \
            --prompt-len 128 --composition 'decode: mk' --runs 20 --warmup 3 2>&1 |
            grep -E '^decode step|flagged' | tr '\n' ' ')
          echo "$model b$batch round $round $side: $line" | tee -a "$out/branch-runs.txt"
        done
      done
    done
    exit 0
    ;;
  *)
    echo "run.sh: SET is a, b, c or d" >&2
    exit 2
    ;;
esac
files=()
for p in "${patches[@]}"; do files+=("$here/$p.patch"); done

for shape in "${shapes[@]}"; do
  read -r model batch <<<"$shape"
  echo "== $model batch $batch"
  bash scripts/nvrtc-variants.sh "$megacut" 2 "${files[@]}" -- --model "$model" --batch "$batch" \
    --prompt-len 128 --composition 'decode: mk' --runs 20 --warmup 3 \
    2>&1 | tee "$out/$model-b$batch.txt"
done
