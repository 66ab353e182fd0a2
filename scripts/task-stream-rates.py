#!/usr/bin/env python3
"""How fast each op's tasks move their bytes, from a profile's standalone task benchmarks.

Usage: scripts/task-stream-rates.py MEGACUT PROFILE.json BATCH [STAGE]

For each distinct op of STAGE (default decode) at BATCH that has task benchmarks (the first of
each name within the layers, e.g. qkv, gate_up), its bytes a task (TileCost bytes read plus
written, from `MEGACUT graph --json`, mean over the op's tiles) over the benchmark's mean task
duration at each CTA count: GB/s a CTA, and in all (times the CTAs running at once, at most the
op's tiles). At 1 CTA one SM streams the op's tiles back to back alone; at the device's SM
count every SM shares the device's bandwidth. No GPU needed.
"""
import json
import subprocess
import sys
import tempfile


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    megacut, profile_path, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
    stage_name = sys.argv[4] if len(sys.argv) == 5 else "decode"
    with open(profile_path) as f:
        profile = json.load(f)
    batches = [b for b in profile["batches"] if b["batch"] == batch]
    if not batches:
        sys.exit(f"{profile_path}: no batch {batch}")
    stages = [s for s in batches[0]["stages"] if s["stage"] == stage_name]
    if not stages:
        sys.exit(f"{profile_path}: batch {batch} has no stage {stage_name}")
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([megacut, "graph", "--model", profile["model"]["name"], "--stage", stage_name,
                        "--batch", str(batch), "--prompt-len", str(profile["prompt_len"]),
                        "--json", out.name], check=True, stdout=subprocess.DEVNULL)
        graph = json.load(open(out.name))
    print(f"{profile['model']['name']} · {stage_name} · batch {batch} · "
          f"device copy {profile['device']['copy_bandwidth_gb_per_s']:.0f} GB/s "
          f"({profile['device']['sm_count']} SMs)")
    print(f"{'op':<12} {'kind':<16} {'tiles':>6} {'KB/task':>8}  GB/s a CTA (in all) at CTAs")
    seen = set()
    for op in stages[0]["ops"]:
        node = graph["ops"][op["index"]]
        if node["name"] != op["name"]:
            sys.exit(f"{profile_path}: op {op['index']} is {op['name']}, the graph's {node['name']}")
        short = op["name"].split(".")[-1]
        if short in seen or not op.get("tasks"):
            continue
        seen.add(short)
        tiles = node["tiling"]["tiles"]
        task_bytes = (node["bytes_read"] + node["bytes_written"]) / tiles
        rates = []
        for t in op["tasks"]:
            per_cta = task_bytes / t["duration_ns"]["mean"]
            rates.append(f"{t['ctas']}: {per_cta:5.1f} ({per_cta * min(t['ctas'], tiles):6.0f})")
        print(f"{short:<12} {op['kind']:<16} {tiles:>6} {task_bytes / 1024:>8.1f}  "
              + "   ".join(rates))


if __name__ == "__main__":
    main()
