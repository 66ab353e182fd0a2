#!/usr/bin/env python3
"""Where the hops between a megakernel region's ops go, from a task timing file.

Usage: scripts/task-timing-hops.py TIMING.json[.gz] [FIRST_LAYER LAST_LAYER [GRAPH.json]]

TIMING.json is what `megacut run --task-timing` writes (megacut.task_timing/1), or it gzipped. For each op of
a decoder layer, averaged over layers FIRST_LAYER..LAST_LAYER (default 1..14: neither the first
nor the last), and for the ops outside the layers: the median task, the hop from the op before's
last task end to this op's first task start, and the way of the op before's last task to it:
end to the signaler seeing it done (notice), the release fence and counter store (fence, to
publish_ns), publish to this op's first start (wait). All in microseconds. With GRAPH.json
(`megacut graph --json` of one of the file's stages, same model and batch), that stage's rows also
give the op's step (the last end of the ops before it to its own, as `megacut run --task-timing`
prints it) and its bytes over its step in GB/s. Last, when the op's tasks end after the ops before
it (the first, the median and the last): each op waits for the last task of the op before, so
the spread of an op's ends is time the layer loses.
"""
import gzip
import json
import re
import statistics
import sys


def main():
    path = sys.argv[1]
    first, last = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (1, 14)
    graph = None
    if len(sys.argv) > 4:
        with open(sys.argv[4]) as f:
            graph = json.load(f)
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        doc = json.load(f)
    for stage in doc["stages"]:
        names = stage["ops"]
        stage_graph = graph if graph is not None and graph["stage"] == stage["stage"] else None
        if stage_graph is not None and [op["name"] for op in stage_graph["ops"]] != names:
            sys.exit(f"{sys.argv[4]}: its ops are not those of the file's {stage['stage']} stage")
        for region in stage["regions"]:
            by_op = {}
            for t in region["tasks"]:
                by_op.setdefault(t["op"], []).append(t)
            ops = sorted(by_op)
            rows = {}
            for i, op in enumerate(ops):
                tasks = by_op[op]
                start = min(t["start_ns"] for t in tasks)
                end = max(t["end_ns"] for t in tasks)
                median = statistics.median(t["end_ns"] - t["start_ns"] for t in tasks)
                hop = notice = fence = wait = 0.0
                step = end - start
                ends = sorted(t["end_ns"] for t in tasks)
                first_end, median_end = ends[0] - start, statistics.median(ends) - start
                if i > 0:
                    before = max(by_op[ops[i - 1]], key=lambda t: t["end_ns"])
                    hop = start - before["end_ns"]
                    done = max(t["end_ns"] for o in ops[:i] for t in by_op[o])
                    step = end - done
                    first_end, median_end = ends[0] - done, statistics.median(ends) - done
                    if before.get("signal_ns"):
                        notice = before["signal_ns"] - before["end_ns"]
                        fence = before["publish_ns"] - before["signal_ns"]
                        wait = start - before["publish_ns"]
                m = re.match(r"(.*)layers\.(\d+)\.(.*)", names[op])
                if m and not first <= int(m.group(2)) <= last:
                    continue
                key = m.group(1) + m.group(3) if m else names[op]
                rate = 0.0
                if stage_graph is not None and step > 0:
                    node = stage_graph["ops"][op]
                    rate = (node["bytes_read"] + node["bytes_written"]) / step
                rows.setdefault(key, []).append(
                    (median, hop, notice, fence, wait, step, first_end, median_end, rate))
            print(f"{stage['stage']} region on {region['config']['grid']} CTAs, layers {first}-{last} "
                  "averaged (us): task, hop from the op before, and of it notice, fence, wait; "
                  "its tasks' first, median and last end after the ops before it")
            for key, values in rows.items():
                mean = [sum(v[j] for v in values) / len(values) / 1000 for j in range(8)]
                line = (f"  {key:26s} task {mean[0]:6.2f}  hop {mean[1]:5.2f}  notice {mean[2]:5.2f}"
                        f"  fence {mean[3]:5.2f}  wait {mean[4]:5.2f}")
                if stage_graph is not None:
                    rate = sum(v[8] for v in values) / len(values)
                    line += f"  step {mean[5]:6.2f}  {rate:5.0f} GB/s"
                line += f"  ends {mean[6]:6.2f} {mean[7]:6.2f} {mean[5]:6.2f}"
                print(line)


if __name__ == "__main__":
    main()
