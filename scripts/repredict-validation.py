#!/usr/bin/env python3
"""Predicts every measured candidate of a validation again with the current simulator.

A validation.json keeps what the simulator predicted when it ran; after the simulator changes,
this says how the new predictions fare against the same measurements: per batch the TTFO
prediction then and now beside the measured p50, the predicted best now, and per model the
TTFO and decode-step MAPE then and now. It reads the profile the validation names (a path
from the current directory) and runs `megacut simulate` on each candidate.

Usage: scripts/repredict-validation.py [--megacut BIN] VALIDATION_JSON...
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def composition_json(text, linear_providers):
    """The composition's JSON form from its canonical text, with the candidate's linear providers."""
    stages = {}
    for clause in text.split(";"):
        stage, regions = clause.split(":", 1)
        stages[stage.strip()] = []
        for region in regions.split():
            kind, bounds = region.rstrip("]").split("[")
            begin, end = bounds.split(":")
            stages[stage.strip()].append({"kind": kind, "begin": int(begin), "end": int(end)})
    return {"schema": "megacut.composition/1", "stages": stages,
            "linear_providers": linear_providers}


def simulate(megacut, profile, batch, candidate):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "prediction.json")
        composition = os.path.join(tmp, "composition.json")
        with open(composition, "w") as f:
            json.dump(composition_json(candidate["composition"],
                                       candidate.get("linear_providers", "ours")), f)
        cmd = [megacut, "simulate", "--profile", profile, "--batch", str(batch),
               "--composition", composition, "--json", out] + (["--pdl"] if candidate["pdl"] else [])
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"{' '.join(cmd[:6])}...: {run.stderr.strip()}")
        with open(out) as f:
            return json.load(f)


def mape(errors):
    return 100 * sum(errors) / len(errors) if errors else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megacut", default="build/nocuda/app/megacut")
    parser.add_argument("validations", nargs="+")
    args = parser.parse_args()
    for path in args.validations:
        with open(path) as f:
            v = json.load(f)
        then, now, step_then, step_now = [], [], [], []
        for b in v["batches"]:
            rows = []
            for c in b["candidates"]:
                if not c.get("measured") or not c.get("predicted"):
                    continue
                p = simulate(args.megacut, v["profile"], b["batch"], c)
                measured = c["measured"]["ttfo"]["p50"]
                measured_step = c["measured"]["decode_step"]["p50"]
                old, new = c["predicted"]["ttfo_ns"] / 1e6, p["ttfo_ns"] / 1e6
                then.append(abs(old - measured) / measured)
                now.append(abs(new - measured) / measured)
                step_then.append(abs(c["predicted"]["decode_step_ns"] / 1e6 - measured_step) /
                                 measured_step)
                step_now.append(abs(p["decode_step_ns"] / 1e6 - measured_step) / measured_step)
                rows.append((c["labels"][0], old, new, measured))
            best_now = min(rows, key=lambda r: r[2])[0]
            best_measured = min(rows, key=lambda r: r[3])[0]
            print(f"{v['model']} batch {b['batch']}: predicted best now {best_now}, "
                  f"measured best {best_measured}")
            for label, old, new, measured in rows:
                print(f"  {label:10} TTFO predicted then {old:9.3f} ms, now {new:9.3f} ms, "
                      f"measured p50 {measured:9.3f} ms")
        print(f"{v['model']}: TTFO MAPE then {mape(then):.1f}%, now {mape(now):.1f}%; decode "
              f"step MAPE then {mape(step_then):.1f}%, now {mape(step_now):.1f}% over "
              f"{len(now)} candidates\n")


if __name__ == "__main__":
    main()
