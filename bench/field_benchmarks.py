"""The field's benchmarks, as a campaign that outlives a session: our jobs' defaults on GLUE,
CoNLL-2003 and SQuAD, seed by seed, each run appended to a results file in the repository.

    python -m bench.field_benchmarks run                 # every run of the grid not yet recorded
    python -m bench.field_benchmarks run --tasks rte,mrpc --seeds 0
    python -m bench.field_benchmarks table               # the table, from the results file
    python -m bench.field_benchmarks table --write BENCHMARKS.md
    python -m bench.field_benchmarks run --tasks rte,mrpc,stsb,cola --precision mixed_bfloat16
    python -m bench.field_benchmarks run --tasks mrpc --precision mixed_bfloat16 --again

The grid (`GRID`): RTE, MRPC, STS-B and CoLA with seeds 0, 1 and 2; SST-2, CoNLL-2003
(`eng.testa`) and the SQuAD dev split of `../shared/data/benchmarks` with seed 0, each with
only the data given to `pipelines.glue`, `pipelines.finetune_ner` or `pipelines.finetune_qa`,
in a fresh process (`bench.bench_peer_finetuning`'s one-run child). A run is recorded as one
JSON line of `bench/results/field_benchmarks.jsonl`: task, seed, the recipe it ran under
(`keras_bert.training.recipes`), the job's whole resolved configuration, every metric,
training seconds and sequences/s, the commit, the CPU and its features, the load average.
A run whose task, seed, recipe and precision are recorded is not run again; a changed recipe
runs anew. `--precision mixed_bfloat16` runs the grid in bfloat16 (what `--precision auto`
picks on a CPU with bfloat16 units), for its own table beside float32's spread. `--again` runs
the grid anew on this code: it skips only the runs recorded at this revision (`git_revision`),
so it too resumes where it was stopped, and the table then shows the new runs (each seed's last).
Each run's job writes to its own directory under `--work-dir` (deleted once the run is
recorded): run the command again after it was stopped and the run in flight resumes from its
last finished epoch (its line then records `resumed_after_epoch`, and its `train_seconds` are
the resumed process's only).

`table` sets each task's mean and spread beside Hugging Face's (`peer_anchors.json`: the example
scripts' recipes on the same weights, 3 seeds, measured once on a GPU) and, with `--write`,
replaces the text between `<!-- field_benchmarks -->` and `<!-- /field_benchmarks -->` in the
given file: BENCHMARKS.md's tables are generated, not edited.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import datetime
import hashlib
import itertools
import json
import os
import re
import shutil
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.bench_peer_finetuning import (
    BENCHMARKS,
    build_parser,
    headline_metrics,
    is_glue,
    run_in_subprocess,
)
from bench.benchmarks_page import cpu_name, marked_text, write_between_markers
from bench.results_lines import append_record, git_revision, read_records

RESULTS = Path(__file__).parent / "results" / "field_benchmarks.jsonl"
# Runs in flight, kept across sessions (checkpoints: not for the repository).
WORK_DIR = (
    Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    / "keras_bert"
    / "field_benchmarks"
)
# Training speed of both sides, one run taking turns (`bench.bench_peer_finetuning --results`):
# on a sample of each task, and on its whole training split with each side's recipe.
SPEED_RESULTS = RESULTS.with_name("training_speed.jsonl")
# A CPU's latest speed campaign: its runs that finished within this many days of its last one.
CAMPAIGN_DAYS = 2
WHOLE_SPLIT_SPEED_RESULTS = RESULTS.with_name("training_speed_whole_split.jsonl")
ANCHORS = BENCHMARKS / "peer_anchors.json"
# The campaign in the order it is worth running: a whole seed of the four small GLUE tasks at a
# time, then the long single-seed runs.
GRID: dict[str, tuple[int, ...]] = {
    "rte": (0, 1, 2),
    "mrpc": (0, 1, 2),
    "stsb": (0, 1, 2),
    "cola": (0, 1, 2),
    "conll2003": (0,),
    "squad": (0,),
    "sst2": (0,),
}
MARKERS = ("<!-- field_benchmarks -->", "<!-- /field_benchmarks -->")
TASK_NAMES = {
    "rte": "RTE (accuracy)",
    "mrpc": "MRPC (F1 / accuracy)",
    "stsb": "STS-B (Pearson / Spearman)",
    "cola": "CoLA (Matthews)",
    "sst2": "SST-2 (accuracy)",
    "conll2003": "CoNLL-2003 `eng.testa` (entity F1)",
    "squad": "SQuAD dev split (exact match / F1)",
}


def job_recipe(task: str) -> dict:
    """The recipe our job runs a task with by default, less its precision: a record's identity
    besides its seed and the precision it trained in (`trained_in`).

    Example:
    >>> job_recipe("mrpc")
    {'epochs': 3, 'batch_size': 32, 'seq_length': 128, 'run': {'learning_rate': 0.0001, \
'warmup_fraction': 0.1}}
    """
    from keras_bert.training import recipes

    if is_glue(task):
        recipe = recipes.glue_recipe(task)
    elif task == "squad":
        recipe = {**copy.deepcopy(recipes.QA_RECIPE), "windows": recipes.QA_WINDOWS}
    else:
        recipe = copy.deepcopy(recipes.NER_RECIPE)
    run = recipe.pop("run", {})
    run.pop("precision", None)
    return {**recipe, "run": run} if run else recipe


def grid_runs(tasks: Sequence[str], seeds: Sequence[int] | None) -> list[tuple[str, int]]:
    """(task, seed) in the campaign's order: seed by seed, then task by task."""
    wanted = [(task, seed) for task in tasks for seed in (seeds or GRID[task])]
    return sorted(wanted, key=lambda run: (run[1], list(GRID).index(run[0])))


def record_of(task: str, seed: int, result: dict) -> dict:
    """The results line of a finished run."""
    from keras_bert.cpu import cpu_summary

    return {
        "task": task,
        "seed": seed,
        "recipe": job_recipe(task),
        **result,
        "sequences_per_second": round(result["train_sequences"] / result["train_seconds"], 2),
        "revision": git_revision(),
        "cpu": cpu_summary(),
        # Above its cores + 1, something else shared them (`ran_beside_other_work`).
        "load_average_15min": round(os.getloadavg()[2], 2),
        "finished": datetime.datetime.now().isoformat(timespec="seconds"),
    }


def trained_in(record: dict) -> str:
    """The dtype policy a run trained in (records before it was recorded: float32).

    Example:
    >>> trained_in({"precision": {"policy": "mixed_bfloat16", "requested": "auto"}})
    'mixed_bfloat16'
    >>> trained_in({"task": "rte"})
    'float32'
    """
    return (record.get("precision") or {}).get("policy", "float32")


def run_work_dir(
    root: Path, task: str, seed: int, precision: str = "float32", revision: str = ""
) -> Path:
    """Where the job of (task, seed) under today's recipe writes: the same directory when the
    run is started again, another once the recipe, the precision or the given code `revision`
    (a run of `--again`) changes."""
    identity = (json.dumps(job_recipe(task), sort_keys=True) + revision).encode()
    return root / f"{task}-seed{seed}-{precision}-{hashlib.sha256(identity).hexdigest()[:12]}"


def runs_to_go(
    tasks: Sequence[str],
    seeds: Sequence[int] | None,
    records: Sequence[dict],
    precision: str,
    revision: str = "",
) -> list[tuple[str, int]]:
    """(task, seed) of the grid that `records` hold no run of under today's recipe in
    `precision` (at code `revision`, if given), in the campaign's order."""
    done = [
        (r["task"], r["seed"], r["recipe"], trained_in(r))
        for r in records
        if not revision or r["revision"] == revision
    ]
    return [
        (task, seed)
        for task, seed in grid_runs(tasks, seeds)
        if (task, seed, job_recipe(task), precision) not in done
    ]


def run_campaign(
    tasks: Sequence[str],
    seeds: Sequence[int] | None,
    results: Path,
    work_root: Path = WORK_DIR,
    precision: str = "float32",
    again: bool = False,
) -> None:
    """Runs every (task, seed) not yet in `results` under today's recipe in `precision` (with
    `again`: not yet at this code's revision), appending each; a run stopped earlier resumes in
    its directory under `work_root`."""
    revision = git_revision() if again else ""
    todo = runs_to_go(tasks, seeds, read_records(results), precision, revision)
    at = f" at {revision}" if revision else ""
    print(f"{len(todo)} runs to go in {precision}{at}, appended to {results}", flush=True)
    for number, (task, seed) in enumerate(todo, start=1):
        print(f"[{number}/{len(todo)}] {task}, seed {seed}", flush=True)
        args = build_parser().parse_args(
            ["--tasks", task, "--sides", "keras_bert", "--precision", precision]
        )
        work_dir = run_work_dir(work_root, task, seed, precision, revision)
        if work_dir.exists():
            print(f"[{number}/{len(todo)}] resuming in {work_dir}", flush=True)
        result = run_in_subprocess("keras_bert", task, seed, args, work_dir)
        record = record_of(task, seed, result)
        append_record(results, record)
        shutil.rmtree(work_dir)
        scores = " / ".join(f"{value:.2f}" for value in headline_scores(record))
        print(f"[{number}/{len(todo)}] {task}, seed {seed}: {scores}", flush=True)


# --- the table ------------------------------------------------------------------------------


def headline_scores(record: dict) -> list[float]:
    """A record's headline metrics in points (GLUE's fractions times 100)."""
    return [
        scale * record["evaluation"][name][metric]
        for name, metric, scale in headline_metrics(record["task"])
    ]


def anchor_scores(task: str, anchors: dict) -> list[list[float]]:
    """Hugging Face's headline metrics per seed, in points, in `headline_metrics`' order."""
    if task == "conll2003":
        return [[value] for value in anchors["conll2003_eng_testa_f1"]]
    if task == "squad":
        squad = anchors["squad_v1.1_dev_split"]
        return [list(pair) for pair in zip(squad["exact_match"], squad["f1"], strict=True)]
    metrics = anchors["glue_dev"][task]
    columns = [metrics[metric] for _, metric, _ in headline_metrics(task)]
    return [[100 * value for value in seed] for seed in zip(*columns, strict=True)]


def task_score(scores: Sequence[float]) -> float:
    """One number a task is compared by: the mean of its metrics (GLUE's rule)."""
    return statistics.mean(scores)


def mean_task_score(runs: Sequence[dict]) -> float:
    """The task score of runs of one task, averaged over them."""
    return statistics.mean(task_score(headline_scores(run)) for run in runs)


def seeded_glue_tasks() -> list[str]:
    """The GLUE tasks the grid runs with several seeds: the goal's GLUE average."""
    return [task for task in GRID if is_glue(task) and len(GRID[task]) > 1]


def summary_cell(per_seed: Sequence[Sequence[float]]) -> str:
    """ "mean (lowest-highest)" of the task score over seeds; the metrics' means beside it."""
    scores = [task_score(seed) for seed in per_seed]
    means = [statistics.mean(column) for column in zip(*per_seed, strict=True)]
    spread = f" ({min(scores):.2f}-{max(scores):.2f})" if len(scores) > 1 else ""
    metrics = f" = {' / '.join(f'{m:.2f}' for m in means)}" if len(means) > 1 else ""
    return f"**{statistics.mean(scores):.2f}**{spread}{metrics}"


def latest_records(records: Sequence[dict], precision: str = "float32") -> dict[str, list[dict]]:
    """Each task's records under its current recipe in `precision`, one per seed (the last
    recorded)."""
    by_task: dict[str, dict[int, dict]] = {}
    for record in records:
        current = record["task"] in GRID and record["recipe"] == job_recipe(record["task"])
        if current and trained_in(record) == precision:
            by_task.setdefault(record["task"], {})[record["seed"]] = record
    return {task: [by_seed[seed] for seed in sorted(by_seed)] for task, by_seed in by_task.items()}


def quality_table(records: Sequence[dict], anchors: dict) -> str:
    """Markdown: per task our seeds, mean and spread against the anchors', and the GLUE
    average of the tasks both sides have."""
    runs = latest_records(records)
    lines = [
        "| task (metrics) | keras_bert per seed | keras_bert mean (range) | "
        "Hugging Face mean (range) | difference | sequences/s |",
        "|---|---|---|---|---:|---:|",
    ]
    ours, theirs = {}, {}
    for task in GRID:
        peer = anchor_scores(task, anchors)
        if task not in runs:
            lines.append(f"| {TASK_NAMES[task]} | not run | | {summary_cell(peer)} | | |")
            continue
        per_seed = [headline_scores(record) for record in runs[task]]
        ours[task] = mean_task_score(runs[task])
        theirs[task] = statistics.mean(map(task_score, peer))
        seeds = seed_cell(runs[task])
        lines.append(
            f"| {TASK_NAMES[task]} | {seeds} | {summary_cell(per_seed)} | {summary_cell(peer)} "
            f"| {ours[task] - theirs[task]:+.2f} | {speed_cell(runs[task])} |"
        )
    # The goal's average: the GLUE tasks of three seeds; then with the single-seed ones too.
    seeded = [task for task in seeded_glue_tasks() if task in ours]
    every = [task for task in ours if is_glue(task)]
    for glue in dict.fromkeys((tuple(seeded), tuple(every))):
        if not glue or any(len(runs[task]) < len(GRID[task]) for task in glue):
            continue
        average, peer_average = (statistics.mean(side[t] for t in glue) for side in (ours, theirs))
        lines.append(
            f"| GLUE average ({', '.join(glue)}; all seeds) | | **{average:.2f}** "
            f"| {peer_average:.2f} | {average - peer_average:+.2f} | |"
        )
    return "\n".join(lines)


def speed_cell(runs: Sequence[dict]) -> str:
    """The median sequences/s of a task's runs alone (`ran_beside_other_work`) on the CPU of
    its latest run, naming their seeds where others ran on another CPU (speeds of two CPUs do
    not mix) or beside other work; "shared" where every run on that CPU shared its cores.

    Example:
    >>> avx2, zen4 = "AMD EPYC AVX2, 2 cores", "AMD EPYC Zen 4, 2 cores"
    >>> runs = [
    ...     {"seed": 0, "cpu": avx2, "finished": "2026-11-27", "load_average_15min": 2.4,
    ...      "sequences_per_second": 60.0},
    ...     {"seed": 1, "cpu": zen4, "finished": "2026-11-29", "load_average_15min": 2.5,
    ...      "sequences_per_second": 90.0},
    ...     {"seed": 2, "cpu": zen4, "finished": "2026-11-29", "load_average_15min": 4.1,
    ...      "sequences_per_second": 70.0},
    ... ]
    >>> speed_cell(runs), speed_cell(runs[2:])
    ('90.0 (seed 1)', 'shared')
    """
    cpu = max(runs, key=lambda run: run["finished"])["cpu"]
    alone = [run for run in runs if run["cpu"] == cpu and not ran_beside_other_work(run)]
    if not alone:
        return "shared"
    speed = statistics.median(run["sequences_per_second"] for run in alone)
    if len(alone) == len(runs):
        return f"{speed:.1f}"
    seeds = ", ".join(str(run["seed"]) for run in alone)
    return f"{speed:.1f} (seed{'s' if len(alone) > 1 else ''} {seeds})"


def ran_beside_other_work(record: dict) -> bool:
    """Whether a run's 15-minute load exceeded its cores by more than one: TensorFlow's own
    threads lift a run alone on 2 cores to 2.3-2.65, and a second job to 4 or more.

    Example:
    >>> ran_beside_other_work({"cpu": "AMD EPYC, 2 cores; has: avx2", "load_average_15min": 2.6})
    False
    """
    cores = int(re.search(r"(\d+) cores", record["cpu"]).group(1))
    return record["load_average_15min"] > cores + 1


def seed_cell(runs: Sequence[dict]) -> str:
    """ "seed: metrics" of each run."""
    return ", ".join(
        f"{run['seed']}: {' / '.join(f'{value:.2f}' for value in headline_scores(run))}"
        for run in runs
    )


def bfloat16_table(records: Sequence[dict]) -> str:
    """Markdown: per task, the runs in mixed_bfloat16 beside float32's mean and range, and where
    bfloat16's mean falls against float32's seeds (task scores): below, within or above."""
    float32, bfloat16 = latest_records(records), latest_records(records, "mixed_bfloat16")
    lines = [
        "| task (metrics) | mixed_bfloat16 per seed | mixed_bfloat16 mean (range) "
        "| float32 mean (range) | difference of the means; against float32's seeds |",
        "|---|---|---|---|---|",
    ]
    for task, runs in bfloat16.items():
        ours = [headline_scores(run) for run in runs]
        base = [headline_scores(run) for run in float32.get(task, [])]
        base_cell, within = "", "–"
        if base:
            mean, base_scores = mean_task_score(runs), list(map(task_score, base))
            base_cell = summary_cell(base)
            place = (
                "below"
                if mean < min(base_scores)
                else "above"
                if mean > max(base_scores)
                else "within"
            )
            # Rounded first, then + 0.0: a difference of -0.001 prints as +0.00, not -0.00.
            difference = round(mean - statistics.mean(base_scores), 2) + 0.0
            within = f"{difference:+.2f}; {place}"
        lines.append(
            f"| {TASK_NAMES[task]} | {seed_cell(runs)} | {summary_cell(ours)} | {base_cell} "
            f"| {within} |"
        )
    seeded = seeded_glue_tasks()
    if all(
        len(runs.get(task, [])) == len(GRID[task])
        for runs in (float32, bfloat16)
        for task in seeded
    ):
        averages = [
            statistics.mean(mean_task_score(runs[task]) for task in seeded)
            for runs in (bfloat16, float32)
        ]
        lines.append(
            f"| GLUE average ({', '.join(seeded)}; all seeds) | | **{averages[0]:.2f}** "
            f"| **{averages[1]:.2f}** | {averages[0] - averages[1]:+.2f} |"
        )
    return "\n".join(lines)


def provenance(records: Sequence[dict], precision: str = "float32") -> str:
    """The CPUs, commits and loads the table's runs come from."""
    current = [record for runs in latest_records(records, precision).values() for record in runs]
    cpus = ", ".join(dict.fromkeys(record["cpu"] for record in current))
    revisions = ", ".join(dict.fromkeys(record["revision"] for record in current))
    shared = sum(ran_beside_other_work(record) for record in current)
    return (
        f"{len(current)} runs of `{RESULTS.relative_to(RESULTS.parents[2])}`; CPU: {cpus}; "
        f"commits: {revisions}; {shared} ran beside other work (their times are not speeds)."
    )


def after_first_epoch_rate(record: dict) -> float | None:
    """Sequences/s over a speed run's epochs after its first (which holds our graph building
    and both sides' warm-up); None for a run of one epoch, or one that did not time its epochs.

    Example:
    >>> after_first_epoch_rate({"train_sequences": 2000, "epoch_seconds": [30.0, 10.0]})
    100.0
    """
    seconds = record.get("epoch_seconds") or []
    if len(seconds) < 2:
        return None
    return record["train_sequences"] / len(seconds) * (len(seconds) - 1) / sum(seconds[1:])


@dataclasses.dataclass(frozen=True)
class TaskSpeed:
    """One task's speed runs as the speed table compares them: sequences/s over the whole run
    and over the epochs after the first (None where not timed), each the median of the runs at
    one revision, of ours in each precision (`ours`) and of the peer's at each padding
    (`peer`), with the runs' size, CPU, commits and the day our last one finished."""

    task: str
    size: str
    ours: dict[str, list[float | None]]
    peer: dict[str, list[float | None]]
    cpu: str
    commits: str
    date: str = ""

    def ratios(self, precision: str) -> list[float | None]:
        """Our runs in `precision` over the peer's faster padding, whole runs and after epoch 1
        (None where either side lacks the figure; [] without runs of ours in `precision`)."""
        ratios = []
        for index, rate in enumerate(self.ours.get(precision, [])):
            known = [median[index] for median in self.peer.values() if median[index]]
            ratios.append(rate / max(known) if rate and known else None)
        return ratios


def task_speeds(records: Sequence[dict]) -> list[TaskSpeed]:
    """Each CPU's `TaskSpeed`s (`cpu_task_speeds`) from its latest campaign (the runs that
    finished within `CAMPAIGN_DAYS` of its last), the CPUs in the order they were first timed:
    a ratio compares the two sides on one CPU, never across CPUs, and an older campaign's
    tasks, timed on older code, are not shown as current."""
    speeds = []
    for cpu in dict.fromkeys(record["cpu"] for record in records):
        on_cpu = [record for record in records if record["cpu"] == cpu]
        last = max(record.get("finished", "") for record in on_cpu)
        if last:
            since = (
                datetime.datetime.fromisoformat(last) - datetime.timedelta(days=CAMPAIGN_DAYS)
            ).isoformat()
            on_cpu = [record for record in on_cpu if record.get("finished", "") >= since]
        speeds += cpu_task_speeds(on_cpu)
    return speeds


def cpu_task_speeds(records: Sequence[dict]) -> list[TaskSpeed]:
    """Each task's `TaskSpeed` on one CPU's `records`, in the grid's order: our runs at our
    latest revision in each precision, beside Hugging Face's runs with the same settings
    (run_glue as its script pads, to 128, and to each batch's longest; run_ner and run_qa as
    their scripts run) at our revisions, or its latest if none ran there: the VM's speed varies
    by up to 15% between runs."""
    speeds = (lambda run: run["sequences_per_second"], after_first_epoch_rate)

    def medians(runs: list[dict]) -> list[float | None]:
        known = [[speed(run) for run in runs if speed(run)] for speed in speeds]
        return [statistics.median(values) if values else None for values in known]

    def at_latest_revision(runs: list[dict]) -> list[dict]:
        return [run for run in runs if run["revision"] == runs[-1]["revision"]] if runs else []

    ours_runs = [record for record in records if record["side"] == "keras_bert"]
    result = []
    for task in GRID:
        ours = {
            precision: at_latest_revision(
                [run for run in ours_runs if (run["task"], trained_in(run)) == (task, precision)]
            )
            for precision in ("float32", "mixed_bfloat16")
        }
        first = (ours["float32"] or ours["mixed_bfloat16"] or [None])[-1]
        if first is None:
            continue
        our_settings = {k: v for k, v in first["settings"].items() if k != "precision"}
        our_revisions = {run["revision"] for runs in ours.values() for run in runs}
        peer = {}
        for record in records:
            settings = dict(record["settings"])
            padding = settings.pop("glue_padding", "max_length")
            if (record["task"], record["side"], settings) == (task, "hugging_face", our_settings):
                peer.setdefault(padding, []).append(record)
        peer = {
            padding: [run for run in runs if run["revision"] in our_revisions]
            or at_latest_revision(runs)
            for padding, runs in peer.items()
        }
        examples = first["settings"]["max_train_examples"]  # None: the whole training split
        # Runs without `--epochs` train each side's recipe: the epochs they timed.
        epochs = first["settings"].get("epochs") or len(first["epoch_seconds"])
        commits = " / ".join(
            f"{runs[-1]['revision']} ({len(runs)})" for runs in ours.values() if runs
        )
        result.append(
            TaskSpeed(
                task,
                f"{f'{examples:,}' if examples else 'all'} × {epochs}",
                {precision: medians(runs) for precision, runs in ours.items() if runs},
                {padding: medians(runs) for padding, runs in peer.items() if runs},
                first["cpu"].split("; lacks")[0],
                commits,
                max(run.get("finished", "") for runs in ours.values() for run in runs)[:10],
            )
        )
    return result


def speed_table(*record_sets: Sequence[dict]) -> str:
    """Markdown: per task of each set of records in turn (`task_speeds`; a sample's runs, then
    a whole training split's), our speed runs in float32 and in mixed_bfloat16 beside Hugging
    Face's: sequences/s over the whole run and, where the runs timed more than one epoch, over
    the epochs after the first, with each precision's ratio to the peer's faster."""
    lines = [
        "| task, examples × epochs | keras_bert float32: whole run; after epoch 1 "
        "| keras_bert mixed_bfloat16 | HF, its script's padding | HF, GLUE padded to the longest "
        "| float32 / HF's faster: whole run; after epoch 1 | mixed_bfloat16 / HF's faster "
        "| CPU, commits (runs) |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]

    def rates(medians: list[float | None] | None) -> str:
        if not medians or medians[0] is None:
            return ""
        whole, later = medians
        return f"{whole:.1f}; {later:.1f}" if later else f"{whole:.1f}"

    def ratios(values: list[float | None]) -> str:
        return "; ".join(f"**{value:.2f}×**" if value else "–" for value in values)

    for speed in (speed for records in record_sets for speed in task_speeds(records)):
        lines.append(
            f"| {speed.task}, {speed.size} | {rates(speed.ours.get('float32'))} "
            f"| {rates(speed.ours.get('mixed_bfloat16'))} "
            f"| {rates(speed.peer.get('max_length'))} | {rates(speed.peer.get('longest'))} "
            f"| {ratios(speed.ratios('float32'))} | {ratios(speed.ratios('mixed_bfloat16'))} "
            f"| {speed.cpu}, {speed.commits} |"
        )
    return "\n".join(lines)


# --- the headline -----------------------------------------------------------------------------

# BENCHMARKS.md's headline table lies between these. `table --write` rewrites its rows of the
# field's benchmarks, those whose first cell links to SECTION, and leaves the others as they are.
HEADLINE_MARKERS = ("<!-- headline -->", "<!-- /headline -->")
SECTION = "#the-fields-benchmarks"


def counted(count: int, thing: str) -> str:
    """`count` things, in words.

    Example:
    >>> counted(3, "seed"), counted(1, "seed")
    ('3 seeds', '1 seed')
    """
    return f"{count} {thing}{'' if count == 1 else 's'}"


def short_name(task: str) -> str:
    """A task's name without its metrics.

    Example:
    >>> short_name("conll2003")
    'CoNLL-2003 `eng.testa`'
    """
    return TASK_NAMES[task].split(" (")[0]


def headline_row(measured: str, cells: Sequence[str], runs: Sequence[dict]) -> str:
    """A headline row: what is measured (linked to SECTION), ours, the peer's, the ratio or
    difference, then the CPUs and the last day of `runs`."""
    cpus = "; ".join(dict.fromkeys(cpu_name(run["cpu"]) for run in runs))
    date = max(run["finished"] for run in runs)[:10]
    return f"| [{measured}]({SECTION}) | {' | '.join(cells)} | {cpus} | {date} |"


def quality_rows(records: Sequence[dict], anchors: dict) -> list[str]:
    """The headline's quality rows: GLUE's seeded tasks and their average, then each other task
    by its metrics, our float32 means beside the anchors' (the seeds are in the table)."""
    runs = latest_records(records)
    rows = []
    glue = [task for task in seeded_glue_tasks() if task in runs]
    if glue:
        ours = [mean_task_score(runs[task]) for task in glue]
        peer = [statistics.mean(map(task_score, anchor_scores(t, anchors))) for t in glue]
        differences = [mine - theirs for mine, theirs in zip(ours, peer, strict=True)]
        seeds = min(len(runs[task]) for task in glue)
        rows.append(
            headline_row(
                f"GLUE dev, {counted(seeds, 'seed')}: {', '.join(map(short_name, glue))}; average",
                [
                    f"{', '.join(f'{value:.2f}' for value in ours)}; average "
                    f"**{statistics.mean(ours):.2f}**",
                    f"{', '.join(f'{value:.2f}' for value in peer)}; {statistics.mean(peer):.2f}",
                    f"{', '.join(f'{value:+.2f}' for value in differences)}; "
                    f"**{statistics.mean(differences):+.2f}**",
                ],
                [run for task in glue for run in runs[task]],
            )
        )
    for task in (task for task in GRID if task in runs and task not in glue):
        per_seed = [headline_scores(run) for run in runs[task]]
        ours = [statistics.mean(metric) for metric in zip(*per_seed, strict=True)]
        peer = [
            statistics.mean(metric) for metric in zip(*anchor_scores(task, anchors), strict=True)
        ]
        rows.append(
            headline_row(
                f"{TASK_NAMES[task]}, {counted(len(runs[task]), 'seed')}",
                [
                    " / ".join(f"**{value:.2f}**" for value in ours),
                    " / ".join(f"{value:.2f}" for value in peer),
                    " / ".join(f"{a - b:+.2f}" for a, b in zip(ours, peer, strict=True)),
                ],
                runs[task],
            )
        )
    return rows


def speed_row(measured: str, speeds: Sequence[TaskSpeed]) -> str:
    """A headline row of training speed (`TaskSpeed`s, whole runs): ours in each precision and
    the peer's at its faster padding as sequences/s (ranges over several tasks), and our ratios
    to the peer's, the lowest named."""

    def values(figures: list[float]) -> str:
        low, high = min(figures), max(figures)
        return f"{low:.1f}" if low == high else f"{low:.1f}-{high:.1f}"

    ours, ratios = [], []
    for precision in ("float32", "mixed_bfloat16"):
        ratio = {
            speed.task: speed.ratios(precision)[0] for speed in speeds if precision in speed.ours
        }
        if not ratio:
            continue
        ours.append(
            f"{precision} {values([s.ours[precision][0] for s in speeds if precision in s.ours])}"
        )
        lowest = min(ratio, key=ratio.get)
        cell = f"{precision} **{ratio[lowest]:.2f}×**"
        if len(ratio) > 1:
            cell += f" ({short_name(lowest)}) to {max(ratio.values()):.2f}×"
        ratios.append(cell)
    peer = values([max(median[0] for median in speed.peer.values()) for speed in speeds])
    cpus = "; ".join(dict.fromkeys(cpu_name(speed.cpu) for speed in speeds))
    date = max(speed.date for speed in speeds)
    cells = [f"{', '.join(ours)} sequences/s", peer, "; ".join(ratios)]
    return f"| [{measured}]({SECTION}) | {' | '.join(cells)} | {cpus} | {date} |"


def headline_rows(
    records: Sequence[dict],
    anchors: dict,
    speed_records: Sequence[dict] = (),
    whole_split_speed_records: Sequence[dict] = (),
) -> list[str]:
    """The headline's rows of the field's benchmarks: quality (`quality_rows`), then training
    speed on each task's sample, a row per CPU, and over a whole training split (`speed_row`)."""
    rows = quality_rows(records, anchors)
    sample = [speed for speed in task_speeds(speed_records) if speed.peer]
    for _, on_cpu in itertools.groupby(sample, key=lambda speed: speed.cpu):  # CPU by CPU
        on_cpu = list(on_cpu)
        measured = f"training speed, samples of {counted(len(on_cpu), 'task')}"
        rows.append(speed_row(measured, on_cpu))
    for speed in (speed for speed in task_speeds(whole_split_speed_records) if speed.peer):
        measured = f"training speed, {short_name(speed.task)}'s whole split"
        rows.append(speed_row(measured, [speed]))
    return rows


def write_headline_rows(path: Path, rows: Sequence[str]) -> None:
    """Replaces the headline's rows of the field's benchmarks (between `HEADLINE_MARKERS` in
    `path`, the rows whose first cell links to SECTION) with `rows`, where the first of them
    stood (at the table's end if none did)."""
    table = marked_text(path, HEADLINE_MARKERS).strip("\n").split("\n")
    ours = [
        index
        for index, line in enumerate(table)
        if line.split("|")[1].strip().endswith(f"]({SECTION})")
    ]
    at = ours[0] if ours else len(table)
    kept = [line for index, line in enumerate(table) if index not in ours]
    write_between_markers(path, "\n".join(kept[:at] + list(rows) + kept[at:]), HEADLINE_MARKERS)


def table(
    results: Path,
    speed_results: Path = SPEED_RESULTS,
    whole_split_speed_results: Path = WHOLE_SPLIT_SPEED_RESULTS,
) -> str:
    records = read_records(results)
    anchors = json.loads(ANCHORS.read_text("utf-8"))
    text = f"{quality_table(records, anchors)}\n\n{provenance(records)}"
    if latest_records(records, "mixed_bfloat16"):
        text += (
            f"\n\n**Trained in mixed_bfloat16** (`--precision mixed_bfloat16`, what `auto` picks "
            f"on a CPU with bfloat16 units):\n\n{bfloat16_table(records)}\n\n"
            f"{provenance(records, 'mixed_bfloat16')}"
        )
    speed = {path.name: read_records(path) for path in (speed_results, whole_split_speed_results)}
    speed = {name: runs for name, runs in speed.items() if runs}
    if speed:
        files = ", then ".join(f"`{name}`" for name in speed)
        text += f"\n\n**Training speed** ({files}):\n\n{speed_table(*speed.values())}"
    return text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("run", "table"))
    parser.add_argument("--tasks", default=",".join(GRID), help="comma-separated, of the grid")
    parser.add_argument("--seeds", help="comma-separated; default: the grid's for each task")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=WORK_DIR,
        help="runs in flight, one directory each, kept until recorded (default: %(default)s)",
    )
    parser.add_argument(
        "--precision",
        choices=("float32", "mixed_bfloat16"),
        default="float32",
        help="run: the policy the jobs train in (default: %(default)s)",
    )
    parser.add_argument(
        "--again",
        action="store_true",
        help="run: run anew what was recorded on other code (skip only this revision's runs)",
    )
    parser.add_argument("--write", type=Path, help="table: the file to write it into")
    args = parser.parse_args(argv)
    if args.command == "table":
        text = table(args.results)
        if args.write:
            write_between_markers(args.write, text, MARKERS)
            rows = headline_rows(
                read_records(args.results),
                json.loads(ANCHORS.read_text("utf-8")),
                read_records(SPEED_RESULTS),
                read_records(WHOLE_SPLIT_SPEED_RESULTS),
            )
            write_headline_rows(args.write, rows)
        print(text)
        return
    tasks = [task for task in args.tasks.split(",") if task]
    unknown = [task for task in tasks if task not in GRID]
    if unknown:
        parser.error(f"tasks not in the grid: {', '.join(unknown)} (the grid: {', '.join(GRID)})")
    seeds = [int(seed) for seed in args.seeds.split(",")] if args.seeds else None
    # TensorFlow's C++ log lines off, before anything imports it.
    import pipelines  # noqa: F401

    run_campaign(tasks, seeds, args.results, args.work_dir, args.precision, args.again)


if __name__ == "__main__":
    sys.exit(main())
