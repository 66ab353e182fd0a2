#!/usr/bin/env python3
"""Draws the SVG plots of a validation report from OUTDIR/report-data.json.

    megacut report --in reports/h200/llama-3.2-1b --in reports/h200/qwen3-0.6b --out OUTDIR
    python3 scripts/plot.py OUTDIR

Per model, into OUTDIR, under the file names report-data.json gives (report.md links them):
  - scatter: predicted against measured TTFO p50 of every candidate of every batch size, coloured
    by batch, with y = x and a +-5% band (log-log when the times span more than a factor of 10);
  - candidates: per batch size, each candidate's predicted TTFO beside its measured p50 with a
    whisker to p95, the predicted and the measured best marked;
  - coverage: the mk coverage of the predicted best per batch size (and of the measured best and
    the planner's top 1, whose moves the category follows), with the model's category.
Needs only matplotlib (Debian: apt-get install -y python3-matplotlib).
"""
import json
import os
import sys

SCHEMA = "megacut.report-data/1"
BAND = 0.05  # the +-5% band around y = x


def fail(message):
    sys.exit(f"plot.py: error: {message}")


try:
    import matplotlib

    matplotlib.use("Agg")
    # The same data gives the same file: no date in the metadata, fixed element ids.
    matplotlib.rcParams["svg.hashsalt"] = "megacut"
    matplotlib.rcParams["svg.fonttype"] = "path"
    import matplotlib.pyplot as plt
except ImportError:
    fail(
        "matplotlib is missing for "
        + sys.executable
        + ": install it (apt-get install -y python3-matplotlib, or pip install matplotlib)"
    )


def read_data(outdir):
    path = os.path.join(outdir, "report-data.json")
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        fail(f"{path}: cannot read file ({e.strerror}); run megacut report --out {outdir} first")
    except json.JSONDecodeError as e:
        fail(f"{path}: not valid JSON ({e})")
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        fail(f'{path}: field \'schema\': expected "{SCHEMA}"')
    return data


def batch_colours(batches):
    cmap = plt.get_cmap("tab10")
    return {b["batch"]: cmap(i % 10) for i, b in enumerate(batches)}


def scatter(model, path):
    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    colours = batch_colours(model["batches"])
    values = []
    for b in model["batches"]:
        points = [
            (c["predicted_ttfo_ms"], c["measured_ttfo_p50_ms"])
            for c in b["candidates"]
            if c["predicted_ttfo_ms"] is not None and c["measured_ttfo_p50_ms"] is not None
            and c["predicted_ttfo_ms"] > 0 and c["measured_ttfo_p50_ms"] > 0
        ]
        if not points:
            continue
        xs, ys = zip(*points)
        values += xs + ys
        ax.scatter(xs, ys, s=28, color=colours[b["batch"]], alpha=0.8, label=f"batch {b['batch']}",
                   edgecolors="black", linewidths=0.4, zorder=3)
    if not values:
        ax.text(0.5, 0.5, "no candidate both predicted and measured", ha="center",
                transform=ax.transAxes)
    else:
        low, high = min(values), max(values)
        wide = high / low > 10
        if wide:
            ax.set_xscale("log")
            ax.set_yscale("log")
            low, high = low / 1.15, high * 1.15
        else:
            pad = 0.05 * (high - low) or 0.05 * high
            low, high = low - pad, high + pad
        line = [low, high]
        ax.fill_between(line, [v * (1 - BAND) for v in line], [v * (1 + BAND) for v in line],
                        color="grey", alpha=0.15, label="±5%", zorder=1)
        ax.plot(line, line, color="black", linewidth=0.8, label="y = x", zorder=2)
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
        ax.set_aspect("equal")
    ax.set_xlabel("predicted TTFO (ms)")
    ax.set_ylabel("measured TTFO p50 (ms)")
    ax.set_title(f"{model['model']} on {model['device']}: predicted vs measured TTFO")
    ax.grid(True, which="both", linewidth=0.3, alpha=0.5)
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


def candidates(model, path):
    batches = model["batches"]
    if not batches:
        fig, ax = plt.subplots(figsize=(6.4, 2.4))
        ax.text(0.5, 0.5, "no batch validated", ha="center", transform=ax.transAxes)
        ax.set_axis_off()
        fig.savefig(path, metadata={"Date": None})
        plt.close(fig)
        return
    count = max([len(b["candidates"]) for b in batches] + [1])
    height = 3.6 * len(batches) + 0.6  # 0.6 in for the title and the legend
    fig, axes = plt.subplots(len(batches), 1, squeeze=False,
                             figsize=(max(6.4, 0.75 * count + 2), height))
    for ax, b in zip(axes[:, 0], batches):
        cs = b["candidates"]
        xs = range(len(cs))
        for i, c in enumerate(cs):
            if c["predicted_ttfo_ms"] is not None:
                ax.plot(i - 0.15, c["predicted_ttfo_ms"], "o", color="tab:blue",
                        markerfacecolor="white", markersize=7)
            p50, p95 = c["measured_ttfo_p50_ms"], c["measured_ttfo_p95_ms"]
            if p50 is not None:
                ax.errorbar(i + 0.15, p50, yerr=[[0], [p95 - p50]], fmt="s", color="tab:orange",
                            markersize=6, capsize=3)
        times = [v for c in cs for v in (c["predicted_ttfo_ms"], c["measured_ttfo_p95_ms"])
                 if v is not None]
        if times:
            top = max(times)
            bottom = min(v for c in cs for v in (c["predicted_ttfo_ms"], c["measured_ttfo_p50_ms"])
                         if v is not None)
            pad = 0.08 * (top - bottom) or 0.05 * top
            ax.set_ylim(bottom - pad, top + 2.5 * pad)
            for i, c in enumerate(cs):
                missing = [what for what, key in (("not predicted", "predicted_ttfo_ms"),
                                                  ("not measured", "measured_ttfo_p50_ms"))
                           if c[key] is None]
                if missing:
                    ax.annotate(", ".join(missing), (i, bottom), ha="center", va="bottom",
                                fontsize="x-small", color="grey")
                marks = []
                if c["predicted_best"]:
                    marks.append("▲ predicted best")
                if c["measured_best"]:
                    marks.append("★ measured best")
                if marks:
                    ax.annotate("\n".join(marks), (i, top + 0.6 * pad), ha="center", va="bottom",
                                fontsize="x-small", color="darkred")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([c["label"] for c in cs], rotation=30, ha="right", fontsize="small")
        for tick, c in zip(ax.get_xticklabels(), cs):
            if c["predicted_best"] or c["measured_best"]:
                tick.set_fontweight("bold")
        ax.set_xlim(-0.6, len(cs) - 0.4)
        ax.set_ylabel("TTFO (ms)")
        hit = {True: "hit", False: "miss", None: "no verdict"}[b["hit"]]
        ax.set_title(f"batch {b['batch']}: {hit}", fontsize="medium")
        ax.grid(True, axis="y", linewidth=0.3, alpha=0.5)
    handles = [
        plt.Line2D([], [], marker="o", color="tab:blue", markerfacecolor="white", linestyle="",
                   label="predicted"),
        plt.Line2D([], [], marker="s", color="tab:orange", linestyle="-",
                   label="measured p50 (whisker to p95)"),
    ]
    fig.suptitle(f"{model['model']} on {model['device']}: TTFO per candidate", y=1 - 0.1 / height)
    fig.legend(handles=handles, loc="upper center", ncol=2, fontsize="small",
               bbox_to_anchor=(0.5, 1 - 0.3 / height))
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.6 / height))
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


def coverage_of(batch, chosen):
    for c in batch["candidates"]:
        if chosen(c):
            return c["mk_coverage"]
    return None


def coverage(model, path):
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    batches = [b["batch"] for b in model["batches"]]
    drawn = False
    # The planner's top 1 (chosen without PDL) is what the category follows.
    series = (
        (lambda c: c["predicted_best"], "o-", 7, "predicted best"),
        (lambda c: c["measured_best"], "s--", 5, "measured best"),
        (lambda c: "top 1" in c["label"].split(", "), "^:", 5, "planner's top 1"),
    )
    for chosen, style, size, label in series:
        points = [(b["batch"], coverage_of(b, chosen)) for b in model["batches"]]
        points = [(x, 100 * y) for x, y in points if y is not None]
        if points:
            xs, ys = zip(*points)
            ax.plot(xs, ys, style, label=label, markersize=size)
            drawn = True
    if not drawn:
        ax.text(0.5, 0.5, "mk coverage not computed (see report.md)", ha="center",
                transform=ax.transAxes)
    if batches and max(batches) / min(batches) > 4:
        ax.set_xscale("log", base=2)
    ax.set_xticks(batches)
    ax.set_xticklabels([str(b) for b in batches])
    ax.set_ylim(-5, 105)
    ax.set_xlabel("batch size")
    ax.set_ylabel("mk coverage (% of predicted time)")
    ax.set_title(f"{model['model']}: mk coverage · category {model['category']}")
    ax.grid(True, linewidth=0.3, alpha=0.5)
    if drawn:
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


def op_family(event):
    """The op a kernel runs, without its layer: "layers.3.mlp.gate_up" -> "mlp.gate_up"."""
    op = event.get("args", {}).get("op", event.get("name", "?"))
    parts = op.split(".")
    return ".".join(parts[2:]) if parts[0] == "layers" and len(parts) > 2 else op


def trace_stages(path):
    """Per stage of a Chrome trace: (name, start, duration, [(start, duration, family)]), in us."""
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    stages = [e for e in events if e.get("ph") == "X" and e.get("cat") == "stage"]
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
    out = []
    for s in sorted(stages, key=lambda e: e["ts"]):
        begin, end = s["ts"], s["ts"] + s["dur"]
        inside = [(k["ts"] - begin, k["dur"], op_family(k)) for k in kernels
                  if begin <= k["ts"] < end]
        out.append((s["name"], s["dur"], inside))
    return out


def timeline(model, outdir, path):
    t = model["timeline"]
    measured = trace_stages(os.path.join(outdir, t["measured_trace"]))
    simulated = trace_stages(os.path.join(outdir, t["simulated_trace"]))
    names = [name for name, _, _ in measured]
    families = sorted({f for _, _, ks in measured + simulated for _, _, f in ks})
    cmap = plt.get_cmap("tab20")
    colour = {f: cmap(i % 20) for i, f in enumerate(families)}
    fig, axes = plt.subplots(len(names), 1, squeeze=False, figsize=(11, 1.9 * len(names) + 1.6))
    for ax, name in zip(axes[:, 0], names):
        rows = (("measured", dict((n, (d, k)) for n, d, k in measured).get(name)),
                ("simulated", dict((n, (d, k)) for n, d, k in simulated).get(name)))
        for y, (label, stage) in enumerate(reversed(rows)):
            if stage is None:
                continue
            duration, kernels = stage
            ax.broken_barh([(start, max(width, 0.05)) for start, width, _ in kernels], (y - 0.35, 0.7),
                           facecolors=[colour[f] for _, _, f in kernels], linewidth=0)
            ax.text(duration, y, f" {duration / 1000:.3f} ms", va="center", fontsize="small")
        ax.set_yticks([0, 1])
        ax.set_yticklabels(["simulated", "measured"])
        ax.set_title(f"{name}", loc="left", fontsize="medium")
        ax.set_xlabel("µs from the stage's start")
        ax.grid(True, axis="x", linewidth=0.3, alpha=0.5)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour[f]) for f in families]
    fig.legend(handles, families, loc="lower center", ncol=min(6, len(families)),
               fontsize="x-small", frameon=False)
    fig.suptitle(f"{model['model']}: batch {t['batch']}, all-conventional, measured (profiler "
                 f"trace) and simulated")
    fig.tight_layout(rect=(0, 0.02 + 0.03 * ((len(families) + 5) // 6), 1, 1))
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot.py OUTDIR   (the --out of megacut report)")
    outdir = sys.argv[1]
    data = read_data(outdir)
    for model in data["models"]:
        for draw, key in ((scatter, "scatter"), (candidates, "candidates"), (coverage, "coverage")):
            path = os.path.join(outdir, model["plots"][key])
            draw(model, path)
            print(path)
        if model.get("timeline"):
            path = os.path.join(outdir, model["timeline"]["plot"])
            timeline(model, outdir, path)
            print(path)


if __name__ == "__main__":
    main()
