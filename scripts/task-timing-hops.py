#!/usr/bin/env python3
"""Where the hops between a megakernel region's ops go, from a task timing file.

Usage: scripts/task-timing-hops.py [--simulated TRACE.json[.gz]] TIMING.json[.gz] [FIRST_LAYER LAST_LAYER [GRAPH.json]]

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
the spread of an op's ends is time the layer loses. gap: the median task's start after the end
of the task before it on its CTA (the runtime's own time between two tasks, with the wait for
the task's counters; a body's wait for flagged words comes after its start). For an op whose
bodies take flagged words (the file's inputs_ns), its median task's inputs there after the ops
before it ended (inputs: the handover), and its end after its inputs (then: the body's own
work). With --simulated
TRACE.json (the Chrome trace `megacut simulate --trace` writes for the same model, batch and
composition), each op's step as the simulator predicts it too, beside the measured one: where a
prediction of the region goes wrong, op by op.
"""
import gzip
import json
import re
import statistics
import sys


def simulated_steps(trace, stage, names):
    """Per op index of the stage's mk region tasks in a simulated Chrome trace: its step (its last
    task end after the last end of the ops before it; the first op's from its first start), ns."""
    events = trace["traceEvents"]
    spans = [e for e in events if e.get("cat") == "stage" and e.get("name") == stage]
    if not spans:
        sys.exit(f"--simulated: the trace has no {stage} stage")
    begin, end = spans[0]["ts"], spans[0]["ts"] + spans[0]["dur"]
    by_op = {}
    for e in events:
        if e.get("cat") == "task" and begin <= e["ts"] <= end:
            op = e["args"]["op"]
            if op >= len(names) or names[op] != e["name"]:
                sys.exit(f"--simulated: task {e['name']} is not op {op} of the file's {stage} stage")
            by_op.setdefault(op, []).append((e["ts"] * 1000, (e["ts"] + e["dur"]) * 1000))
    steps = {}
    ops = sorted(by_op)
    for i, op in enumerate(ops):
        last_end = max(t[1] for t in by_op[op])
        done = max(t[1] for o in ops[:i] for t in by_op[o]) if i else min(t[0] for t in by_op[op])
        steps[op] = last_end - done
    return steps


def main():
    args = sys.argv[1:]
    simulated = None
    if "--simulated" in args:
        at = args.index("--simulated")
        if at + 1 >= len(args):
            sys.exit("--simulated needs a trace file")
        trace = args[at + 1]
        with (gzip.open(trace, "rt") if trace.endswith(".gz") else open(trace)) as f:
            simulated = json.load(f)
        del args[at:at + 2]
    if not args:
        sys.exit(__doc__)
    path = args[0]
    first, last = (int(args[1]), int(args[2])) if len(args) > 2 else (1, 14)
    graph = None
    if len(args) > 3:
        with open(args[3]) as f:
            graph = json.load(f)
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        doc = json.load(f)
    for stage in doc["stages"]:
        names = stage["ops"]
        stage_graph = graph if graph is not None and graph["stage"] == stage["stage"] else None
        if stage_graph is not None and [op["name"] for op in stage_graph["ops"]] != names:
            sys.exit(f"{args[3]}: its ops are not those of the file's {stage['stage']} stage")
        sim = (simulated_steps(simulated, stage["stage"], names)
               if simulated is not None and stage["regions"] else {})
        for region in stage["regions"]:
            by_op, by_block = {}, {}
            for t in region["tasks"]:
                by_op.setdefault(t["op"], []).append(t)
                by_block.setdefault(t["block"], []).append(t)
            # Each task's start after the end of the task before it on its CTA.
            gap_of = {}
            for queue in by_block.values():
                queue.sort(key=lambda t: t["start_ns"])
                for before, t in zip(queue, queue[1:]):
                    gap_of[t["task"]] = t["start_ns"] - before["end_ns"]
            ops = sorted(by_op)
            rows = {}
            for i, op in enumerate(ops):
                tasks = by_op[op]
                start = min(t["start_ns"] for t in tasks)
                end = max(t["end_ns"] for t in tasks)
                median = statistics.median(t["end_ns"] - t["start_ns"] for t in tasks)
                gaps = [gap_of[t["task"]] for t in tasks if t["task"] in gap_of]
                gap = statistics.median(gaps) if gaps else 0.0
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
                # Bodies that take flagged words: their median task's inputs there, after the
                # ops before it ended, and its end after its inputs.
                fed = [t for t in tasks if t.get("inputs_ns")]
                inputs = then = None
                if fed and i > 0:
                    inputs = statistics.median(t["inputs_ns"] - done for t in fed)
                    then = statistics.median(t["end_ns"] - t["inputs_ns"] for t in fed)
                m = re.match(r"(.*)layers\.(\d+)\.(.*)", names[op])
                if m and not first <= int(m.group(2)) <= last:
                    continue
                key = m.group(1) + m.group(3) if m else names[op]
                rate = 0.0
                if stage_graph is not None and step > 0:
                    node = stage_graph["ops"][op]
                    rate = (node["bytes_read"] + node["bytes_written"]) / step
                rows.setdefault(key, []).append(
                    {"task": median, "gap": gap, "hop": hop, "notice": notice, "fence": fence,
                     "wait": wait, "step": step, "first_end": first_end, "median_end": median_end,
                     "rate": rate, "simulated": sim.get(op, 0.0), "inputs": inputs, "then": then})
            print(f"{stage['stage']} region on {region['config']['grid']} CTAs, layers {first}-{last} "
                  "averaged (us): task, its gap after its CTA's task before it, hop from the op "
                  "before, and of it notice, fence, wait; "
                  "its tasks' first, median and last end after the ops before it; where it takes flagged "
                  "words, its median task's inputs there after the ops before it, and its end after "
                  "them")
            for key, values in rows.items():
                def mean(field, among=values):
                    return sum(v[field] for v in among) / len(among) / 1000  # us

                line = (f"  {key:26s} task {mean('task'):6.2f}  gap {mean('gap'):5.2f}"
                        f"  hop {mean('hop'):5.2f}  notice {mean('notice'):5.2f}"
                        f"  fence {mean('fence'):5.2f}  wait {mean('wait'):5.2f}")
                if stage_graph is not None:
                    line += f"  step {mean('step'):6.2f}  {mean('rate') * 1000:5.0f} GB/s"
                line += (f"  ends {mean('first_end'):6.2f} {mean('median_end'):6.2f}"
                         f" {mean('step'):6.2f}")
                fed = [v for v in values if v["inputs"] is not None]
                if fed:
                    line += f"  inputs {mean('inputs', fed):5.2f}  then {mean('then', fed):5.2f}"
                if simulated is not None:
                    line += f"  simulated step {mean('simulated'):6.2f}"
                print(line)


if __name__ == "__main__":
    main()
