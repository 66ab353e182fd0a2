#!/usr/bin/env bash
# The simulator's replay check as Markdown tables: for each committed H200 profile and each of
# its batch sizes, `megacut simulate --composition conv` against the stage graph times the profile
# measured (which the prediction never reads), one table per model; then the predicted TTFO
# against the measured one: the profile's, where the first output is one stage graph run once
# (the LLMs' prefill), and the all-conventional run of the validation.json beside the profile,
# where there is one (a TTS pipeline's first chunk is tens of graphs run back to back, which the
# profile times only one at a time). Needs no GPU.
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
python3 - "$work" "${profiles[@]}" <<'PY'
import glob, json, os, sys
rows = []
ttfo = []
for path in glob.glob(os.path.join(sys.argv[1], "*.json")):
    p = json.load(open(path))
    stages = [(s["stage"], s["time_ns"], s["measured_conv_graph_ns"]) for s in p["stages"]]
    rows.append((p["model"], p["batch"], stages))
    runs = [(s["runs_to_first_output"], s["measured_conv_graph_ns"]) for s in p["stages"]]
    first_output = [measured for count, measured in runs if count > 0]
    profile_ttfo = (first_output[0] if len(first_output) == 1 and
                    sum(count for count, _ in runs) == 1 else None)
    validation_ttfo = None
    profile_path = sys.argv[2 + int(os.path.basename(path).split("-")[0])]
    validation_path = os.path.join(os.path.dirname(profile_path), "validation.json")
    if os.path.exists(validation_path):
        for b in json.load(open(validation_path))["batches"]:
            if b["batch"] != p["batch"]:
                continue
            for c in b["candidates"]:
                if "conv" in c["labels"] and "ttfo" in c.get("measured", {}):
                    validation_ttfo = c["measured"]["ttfo"]["p50"] * 1e6
    ttfo.append((p["model"], p["batch"], p["ttfo_ns"], profile_ttfo, validation_ttfo))
rows.sort()
ttfo.sort()
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

print("\n| model | batch | TTFO predicted (ms) | profile's measured (ms) | error "
      "| validation's measured (ms) | error |")
print("|---|---:|---:|---:|---:|---:|---:|")
checked = {}
def cells(predicted, measured, source):
    if measured is None:
        return ["-", "-"]
    error = (predicted - measured) / measured
    tally = checked.setdefault(source, [0, 0, 0.0])
    tally[0] += 1
    tally[1] += abs(error) <= 0.03
    tally[2] = max(tally[2], abs(error))
    return [f"{measured / 1e6:.3f}", f"{100 * error:+.1f}%"]
for model, batch, predicted, from_profile, from_validation in ttfo:
    row = [model, str(batch), f"{predicted / 1e6:.3f}"]
    row += cells(predicted, from_profile, "profile")
    row += cells(predicted, from_validation, "validation")
    print("| " + " | ".join(row) + " |")
for source, (n, ok, worst) in checked.items():
    print(f"\nTTFO against the {source}'s measurement: within 3% in {ok} of {n}; worst "
          f"{100 * worst:.1f}%")
PY
