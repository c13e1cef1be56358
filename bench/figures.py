"""The benchmarks' figures, drawn from the committed results files by one command.

    python -m bench.figures                      # every figure, into docs/figures/
    python -m bench.figures training_speed       # one of them
    python -m bench.figures --results-dir DIR --out DIR

Each figure is a small function of the records of one results file of `bench/results/` that
returns a matplotlib `Figure` (`FIGURES`: its name, its results file, its function); a new
figure is a function and a line there. They are written as SVG with their text kept as text,
without a date or random ids, so that a figure drawn again from the same records is the same
file. matplotlib comes with the `docs` extra (`pip install -e '.[docs]'`); nothing of
keras_bert needs it.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.benchmarks_page import cpu_name
from bench.field_benchmarks import (
    ANCHORS,
    GRID,
    RESULTS,
    anchor_scores,
    headline_scores,
    latest_records,
    short_name,
    task_score,
    task_speeds,
)
from bench.results_lines import read_records

RESULTS_DIR = RESULTS.parent
OUT_DIR = Path(__file__).resolve().parents[1] / "docs" / "figures"
OURS, PEER, OURS_BFLOAT16 = "#1f5f8b", "#c8553d", "#7fa7c9"


def _pyplot():
    """matplotlib's pyplot on its file-only backend (no display needed), with what keeps a
    figure's SVG the same file each time: text as text, fixed ids."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams.update(
        {"svg.fonttype": "none", "svg.hashsalt": "keras_bert", "font.size": 9}
    )
    import matplotlib.pyplot as pyplot

    return pyplot


def _legend_below(axes, columns: int, offset: float = 0.14) -> None:
    """The figure's legend in a row under its x-axis label, `offset` of the axes' height below
    them."""
    axes.legend(
        loc="upper center", bbox_to_anchor=(0.5, -offset), ncol=columns, fontsize=7, frameon=False
    )


def seed_summary(scores: Sequence[float]) -> tuple[float, float, float]:
    """(mean, lowest, highest) of per-seed scores.

    Example:
    >>> seed_summary([58.0, 60.0, 56.0])
    (58.0, 56.0, 60.0)
    """
    return statistics.mean(scores), min(scores), max(scores)


def field_benchmarks(records: Sequence[dict], anchors: dict | None = None):
    """Each task's score (the mean of its metrics, in points) over our seeds in float32 and in
    mixed_bfloat16, beside Hugging Face's anchors: bars at the means, whiskers over the seeds'
    range (`bench.field_benchmarks`' table, drawn)."""
    anchors = anchors or json.loads(ANCHORS.read_text("utf-8"))
    sides = {
        "keras_bert float32": (latest_records(records, "float32"), OURS),
        "keras_bert mixed_bfloat16": (latest_records(records, "mixed_bfloat16"), OURS_BFLOAT16),
    }
    tasks = [task for task in GRID if any(task in runs for runs, _ in sides.values())]
    bars = {
        name: {
            task: seed_summary([task_score(headline_scores(run)) for run in runs[task]])
            for task in tasks
            if task in runs
        }
        for name, (runs, _) in sides.items()
    }
    bars["Hugging Face (anchors)"] = {
        task: seed_summary([task_score(seed) for seed in anchor_scores(task, anchors)])
        for task in tasks
    }
    colours = [colour for _, colour in sides.values()] + [PEER]
    figure, axes = _pyplot().subplots(figsize=(7.0, 0.55 * len(tasks) + 1.2))
    height = 0.8 / len(bars)
    for offset, ((name, by_task), colour) in enumerate(zip(bars.items(), colours, strict=True)):
        rows = [tasks.index(task) + offset * height for task in by_task]
        means, lows, highs = zip(*by_task.values(), strict=True) if by_task else ((), (), ())
        whiskers = [
            [mean - low for mean, low in zip(means, lows, strict=True)],
            [high - mean for mean, high in zip(means, highs, strict=True)],
        ]
        axes.barh(rows, means, height, xerr=whiskers, color=colour, label=name, capsize=2)
        for row, mean, high in zip(rows, means, highs, strict=True):
            axes.text(high + 0.6, row, f"{mean:.2f}", va="center", fontsize=7)
    axes.set_yticks([index + height * (len(bars) - 1) / 2 for index in range(len(tasks))])
    axes.set_yticklabels([short_name(task).replace("`", "") for task in tasks])
    axes.invert_yaxis()
    axes.set_xlim(0, 105)
    axes.set_xlabel("task score: the mean of its metrics, points (whiskers: the seeds' range)")
    axes.set_title("The field's benchmarks: MiniLM-L6, dev splits", loc="left")
    _legend_below(axes, len(bars))
    figure.tight_layout()
    return figure


def training_speed(records: Sequence[dict]):
    """Each task's training speed over Hugging Face's at its faster padding, whole runs, ours
    in float32 and in mixed_bfloat16 (`bench.field_benchmarks`' speed table, drawn)."""
    speeds = [speed for speed in task_speeds(records) if speed.peer]
    figure, axes = _pyplot().subplots(figsize=(7.0, 0.45 * len(speeds) + 1.3))
    precisions = {"float32": OURS, "mixed_bfloat16": OURS_BFLOAT16}
    height = 0.8 / len(precisions)
    for offset, (precision, colour) in enumerate(precisions.items()):
        known = [
            (index, ratios[0])
            for index, speed in enumerate(speeds)
            if (ratios := speed.ratios(precision)) and ratios[0]
        ]
        rows = [index + offset * height for index, _ in known]
        values = [ratio for _, ratio in known]
        axes.barh(rows, values, height, color=colour, label=f"keras_bert {precision}")
        for row, value in zip(rows, values, strict=True):
            axes.text(value + 0.05, row, f"{value:.2f}×", va="center", fontsize=7)
    axes.axvline(1.0, color=PEER, linewidth=1, label="Hugging Face (1×)")
    axes.set_xlim(0, 1.12 * axes.get_xlim()[1])  # room for the last bar's label
    axes.set_yticks([index + height / 2 for index in range(len(speeds))])
    names = list(dict.fromkeys(cpu_name(speed.cpu) for speed in speeds))
    cpus = "; ".join(names)
    labels = [
        f"{short_name(speed.task).replace('`', '')}, {speed.size}"
        + (f", {cpu_name(speed.cpu)}" if len(names) > 1 else "")
        for speed in speeds
    ]
    axes.set_yticklabels(labels)
    axes.invert_yaxis()
    axes.set_xlabel("sequences/s over Hugging Face's at its faster padding, whole runs")
    title = f"Training speed against Hugging Face\nboth sides in one run on {cpus}"
    axes.set_title(title, loc="left")
    _legend_below(axes, len(precisions) + 1)
    figure.tight_layout()
    return figure


def cpu_runtimes(records: Sequence[dict]):
    """Serving on each CPU, every runtime of its latest run (`bench.bench_cpu_runtimes`): the
    batch-1 p50 and batch-32 sentences/s, ours against the peers', each bar marked with its
    label agreement with float32 (a runtime below 99% does not serve the same answers)."""
    from bench.bench_cpu_runtimes import MIN_AGREEMENT, latest_runs
    from bench.runtime_workers import RUNTIMES

    order = list(RUNTIMES)
    runs = {
        cpu: sorted(run, key=lambda record: order.index(record["runtime"]))
        for cpu, run in latest_runs(records).items()
    }
    rows = [len(run) for _, run in sorted(runs.items())]
    height = 0.17 * sum(rows) + 0.9 * len(runs) + 0.3
    figure, axes = _pyplot().subplots(
        len(runs),
        2,
        figsize=(8.0, height),
        squeeze=False,
        sharey="row",
        gridspec_kw={"height_ratios": rows},
    )
    measures = (("batch1_p50_ms", "batch-1 p50, ms (less is faster)"),) + (
        ("batch32_sentences_per_second", "batch 32, sentences/s (more is faster)"),
    )
    for (cpu, run), pair in zip(sorted(runs.items()), axes, strict=True):
        labels = [RUNTIMES[record["runtime"]].label for record in run]
        colours = [OURS if record["side"] == "ours" else PEER for record in run]
        for (key, title), panel in zip(measures, pair, strict=True):
            values = [record[key] for record in run]
            panel.barh(range(len(run)), values, color=colours)
            for row, (value, record) in enumerate(zip(values, run, strict=True)):
                marker = "" if record["agreement"] >= MIN_AGREEMENT else " (below 99%)"
                text = f"{value:.1f}, {100 * record['agreement']:.1f}%{marker}"
                panel.text(value, row, f" {text}", va="center", fontsize=6)
            panel.set_xlim(0, 1.7 * max(values))
            # The CPU above the left title: a y label sits left of the runtimes' names, off the
            # figure.
            heading = f"{cpu_name(cpu)}, {run[0]['date']}" if panel is pair[0] else ""
            panel.set_title(f"{heading}\n{title}", fontsize=8, loc="left")
        pair[0].set_yticks(range(len(run)))
        pair[0].set_yticklabels(labels, fontsize=7)
        pair[0].invert_yaxis()
    figure.suptitle(
        "Serving strings on 2 cores: ours (blue) against the runtimes a user could pick "
        "(red), label agreement with float32 beside each bar",
        fontsize=8,
        x=0.01,
        ha="left",
    )
    # tight_layout leaves the suptitle out: keep its line (0.2 inch) clear of the first titles.
    figure.tight_layout(rect=(0, 0, 1, 1 - 0.2 / height))
    return figure


def long_documents(records: Sequence[dict]):
    """ModernBERT's forward pass on one long input against transformers' (sdpa), with BERT-base
    up to 512 tokens beside it: seconds and peak memory against length, from the latest
    revision's float32 records (`bench.bench_long_documents`); keras_bert's ONNX export in ONNX
    Runtime dotted, where the records have it."""
    from bench.bench_long_documents import summary

    records = [record for record in records if record.get("dtype", "float32") == "float32"]
    revision = records[-1]["revision"]
    table = summary([record for record in records if record["revision"] == revision])
    figure, (time_axis, memory_axis) = _pyplot().subplots(1, 2, figsize=(8.0, 4.0))
    colours = {"keras_bert": OURS, "keras_bert_onnx": OURS, "transformers": PEER}
    linestyles = {"keras_bert": "-", "keras_bert_onnx": ":", "transformers": "--"}
    names = {
        "keras_bert_onnx": "keras_bert's ONNX in ONNX Runtime",
        "transformers": "transformers (sdpa)",
    }
    markers = {"modernbert-base": "o", "bert-base": "s"}
    # Side by side, model by model: the legend, filled a column at a time, a column a side.
    lines = {(model, side) for model, side, _ in table}
    for model, side in sorted(lines, key=lambda line: (list(linestyles).index(line[1]), line[0])):
        points = sorted(
            (length, values) for (m, s, length), values in table.items() if (m, s) == (model, side)
        )
        lengths = [length for length, _ in points]
        label = f"{model}, {names.get(side, side)}"
        style = {"color": colours[side], "marker": markers.get(model, "^"), "label": label}
        linestyle = linestyles[side]
        time_axis.plot(lengths, [v["seconds"] for _, v in points], linestyle, **style)
        memory = [v["forward_peak_mb"] / 1024 for _, v in points]
        memory_axis.plot(lengths, memory, linestyle, **style)
    for axis, name in ((time_axis, "seconds a forward pass"), (memory_axis, "peak memory, GiB")):
        axis.set_xscale("log", base=2)
        axis.set_xlabel("tokens (batch 1)")
        axis.set_ylabel(name)
        axis.grid(True, which="both", alpha=0.3)
    time_axis.set_yscale("log")
    handles, labels = time_axis.get_legend_handles_labels()
    sides = len({side for _, side in lines})
    figure.legend(handles, labels, loc="lower center", ncol=sides, fontsize=7, frameon=False)
    cpu = cpu_name(records[-1]["cpu"])
    figure.suptitle(f"Long inputs, one forward pass on {cpu}, {revision}", x=0.01, ha="left")
    figure.tight_layout(rect=(0, 0.12, 1, 1))
    return figure


# name: (its results file in the results directory, the function that draws it)
FIGURES: dict[str, tuple[str, Callable]] = {
    "field_benchmarks": ("field_benchmarks.jsonl", field_benchmarks),
    "training_speed": ("training_speed.jsonl", training_speed),
    "cpu_runtimes": ("cpu_runtimes.jsonl", cpu_runtimes),
    "long_documents": ("long_documents.jsonl", long_documents),
}


def main(argv: list[str] | None = None) -> dict:
    """Draws the figures named (all without a name) from `--results-dir` into `--out`;
    returns them by name."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"of {', '.join(FIGURES)} (default: all)")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    args = parser.parse_args(argv)
    if unknown := sorted(set(args.names) - set(FIGURES)):
        parser.error(f"no figure {', '.join(unknown)}; the figures: {', '.join(FIGURES)}")
    args.out.mkdir(parents=True, exist_ok=True)
    drawn = {}
    for name in args.names or FIGURES:
        results, draw = FIGURES[name]
        if not (args.results_dir / results).is_file() and not args.names:
            print(f"{name}: no {args.results_dir / results} yet, not drawn")
            continue
        drawn[name] = draw(read_records(args.results_dir / results))
        drawn[name].savefig(args.out / f"{name}.svg", metadata={"Date": None})
        print(args.out / f"{name}.svg")
    return drawn


if __name__ == "__main__":
    main()
