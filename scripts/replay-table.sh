#!/usr/bin/env bash
# The simulator's replay check as a Markdown table: for each committed H200 profile and each of
# its batch sizes, `megacut simulate --composition conv` against the stage graph times the profile
# measured (which the prediction never reads). Needs no GPU.
# Usage: scripts/replay-table.sh [MEGACUT] [PROFILE...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
megacut=${1:-${MEGACUT_BUILD_DIR:-$root/build}/nocuda/app/megacut}
shift || true
profiles=("$@")
(( ${#profiles[@]} )) || profiles=("$root"/reports/h200/*/profile.json)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for i in "${!profiles[@]}"; do
  profile=${profiles[$i]}
  for batch in $(python3 -c 'import json, sys
print(" ".join(str(b["batch"]) for b in json.load(open(sys.argv[1]))["batches"]))' "$profile"); do
    "$megacut" simulate --profile "$profile" --batch "$batch" --composition conv \
      --json "$work/$i-$batch.json" >/dev/null
  done
done
python3 - "$work" <<'PY'
import glob, json, os, sys
rows = []
for path in glob.glob(os.path.join(sys.argv[1], "*.json")):
    p = json.load(open(path))
    stages = [(s["stage"], s["time_ns"], s["measured_conv_graph_ns"]) for s in p["stages"]]
    rows.append((p["model"], p["batch"], stages))
rows.sort()
# One table per model: its stages are its own (an LLM's prefill and decode, a TTS pipeline's four
# or three).
within = worst = count = 0
for model in sorted({m for m, _, _ in rows}):
    mine = [r for r in rows if r[0] == model]
    names = [name for name, _, _ in mine[0][2]]
    print(f"\n| model | batch | " +
          " | ".join(f"{n} predicted (ms) | measured (ms) | error" for n in names) + " |")
    print("|---|---:|" + "---:|---:|---:|" * len(names))
    for _, batch, stages in mine:
        cells = []
        for _, predicted, measured in stages:
            count += 1
            error = (predicted - measured) / measured
            worst = max(worst, abs(error))
            within += abs(error) <= 0.03
            cells += [f"{predicted / 1e6:.3f}", f"{measured / 1e6:.3f}", f"{100 * error:+.1f}%"]
        print(f"| {model} | {batch} | " + " | ".join(cells) + " |")
print(f"\nwithin 3%: {within} of {count}; worst {100 * worst:.1f}%")
PY
