"""Fine-tune and score a checkpoint on GLUE: every task with its measured recipe, then the table.

Example (the real MiniLM-L6 checkpoint on the GLUE files in ../shared):
    python -m pipelines.glue --data-dir ../shared/data/benchmarks/glue --tasks all \\
        --output-dir runs/glue

`--tasks` takes `all` (every task whose directory `--data-dir` holds) or tasks in tfds's
spelling (`cola sst2 mrpc stsb rte qnli mnli qqp wnli`, GLUE's `SST-2` works too); `--tfds`
reads them through tensorflow-datasets (`glue/<task>`) instead of files. Each task trains with
its recipe (`keras_bert.training.recipes`: the best setting measured on its dev split; `--help`
shows each task's); a flag such as `--epochs 1` or `--seed 2` applies to every task. Every split
of every task is read and checked before the first task trains: a missing or broken file fails
the job at once, not after the tasks before it have trained.

Writes `<output-dir>/<task>/` (the model, its metrics, backups to resume from),
`<output-dir>/results.json` (each task's metrics by name under its tfds spelling and the GLUE
average) and, where a task has a test split, GLUE's server files in `<output-dir>/submission/`.
A job that is stopped resumes where it was: finished tasks are read back, the running one
resumes from its last epoch.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import time
from pathlib import Path
from typing import NamedTuple

from keras_bert.data.glue import (
    GLUE_TASKS,
    GlueSplit,
    GlueTask,
    available_glue_tasks,
    glue_task,
    glue_task_directory,
    load_tfds_glue,
    read_glue_split,
)
from keras_bert.errors import ConfigError
from keras_bert.finetuning.glue import finetune_glue_task
from keras_bert.finetuning.recipe import FinetuningConfig
from keras_bert.metrics.glue import glue_average, glue_task_score
from keras_bert.training.recipes import glue_recipe, recipe_flags
from keras_bert.training.resumed_runs import changed_settings
from pipelines.common import (
    JobParser,
    add_config_arguments,
    config_overrides,
    job_checkpoint,
    merge_config,
    run_job,
)


def parse_tasks(spelling: list[str], data_dir: str | None) -> list[GlueTask]:
    """The tasks `--tasks` names (`all`: those `data_dir` holds, every task through tfds)."""
    names = [name for item in spelling for name in item.split(",") if name]
    if names == ["all"]:
        if data_dir is None:
            return [task for task in GLUE_TASKS.values() if task.labelled_by is None]
        tasks = available_glue_tasks(data_dir)
        if not tasks:
            raise FileNotFoundError(f"{data_dir}: no GLUE task directory with a train.tsv.")
        return tasks
    return [glue_task(name) for name in dict.fromkeys(glue_task(name).name for name in names)]


def recipe_defaults() -> dict[str, str]:
    """`--help`'s default of each flag that the GLUE recipes set: its value where every task
    runs the same, else each task's.

    Example:
    >>> recipe_defaults()["seq_length"]
    '128'
    """
    recipes = {
        name: recipe_flags(glue_recipe(name))
        for name, task in GLUE_TASKS.items()
        if task.labelled_by is None
    }
    defaults = {}
    for flag in dict.fromkeys(flag for recipe in recipes.values() for flag in recipe):
        tasks_by_value = collections.defaultdict(list)
        for name, recipe in recipes.items():
            value = recipe[flag]
            tasks_by_value[value if isinstance(value, str) else f"{value:g}"].append(name)
        common, *others = sorted(tasks_by_value, key=lambda value: -len(tasks_by_value[value]))
        each = "; ".join(f"{value} for {', '.join(tasks_by_value[value])}" for value in others)
        defaults[flag] = (
            f"each task's recipe: {each}; {common} for the others" if others else common
        )
    return defaults


class TaskSplits(NamedTuple):
    """A task's splits: what it trains on, scores, and predicts for GLUE's server."""

    train: GlueSplit
    evaluations: list[GlueSplit]
    tests: list[GlueSplit]


class SplitSource:
    """Reads a task's splits from GLUE's files or through tfds."""

    def __init__(self, data_dir: str | None, tfds_data_dir: str | None):
        self.data_dir, self.tfds_data_dir = data_dir, tfds_data_dir

    def read(self, task: GlueTask, split: str) -> GlueSplit:
        if self.data_dir is None:
            return load_tfds_glue(task, split, data_dir=self.tfds_data_dir)
        return read_glue_split(self.data_dir, task, split)

    def read_task(self, task: GlueTask) -> TaskSplits:
        """Every split of a task: train, its evaluation splits, and the test splits there are."""
        evaluations = [self.read(task, split) for split in task.evaluation_splits]
        return TaskSplits(self.read(task, "train"), evaluations, self.test_splits(task))

    def test_splits(self, task: GlueTask) -> list[GlueSplit]:
        """The task's test splits that exist (files only; tfds always has them), and AX's
        with MNLI."""
        tasks = [task, *(t for t in GLUE_TASKS.values() if t.labelled_by == task.name)]
        splits = []
        for owner in tasks:
            for split in owner.test_splits:
                if self.data_dir is not None and not self._has_file(owner, split):
                    continue
                splits.append(self.read(owner, split))
        return splits

    def _has_file(self, task: GlueTask, split: str) -> bool:
        try:
            return (glue_task_directory(self.data_dir, task) / task.split_files[split]).is_file()
        except FileNotFoundError:
            return False


def task_config(task: GlueTask, overrides: dict, output_dir: Path) -> FinetuningConfig:
    """The task's recipe with the command line's settings over it."""
    values = merge_config(glue_recipe(task.name), overrides)
    values["checkpoint"] = job_checkpoint(values.get("checkpoint"))
    return FinetuningConfig(**values, output_dir=str(output_dir / task.name))


def finished_summary(config: FinetuningConfig) -> dict | None:
    """The summary of a task that an earlier run of the job finished with these settings; an
    unfinished or absent one is None, one trained with other settings an error (settings
    that do not change what is trained may differ: `changed_settings`)."""
    output_dir = Path(config.output_dir)
    saved_config = output_dir / "config.json"
    if not saved_config.is_file():
        return None
    saved = json.loads(saved_config.read_text("utf-8"))
    changes = changed_settings(saved, dataclasses.asdict(config))
    if changes:
        raise ConfigError(
            f"{output_dir} holds a run with other settings ({'; '.join(changes)}); give "
            "another --output-dir."
        )
    metrics = output_dir / "metrics.json"
    summary = json.loads(metrics.read_text("utf-8")) if metrics.is_file() else {}
    return summary if "evaluation" in summary else None


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def task_results(task: GlueTask, summary: dict) -> dict[str, dict[str, float]]:
    """Metrics by tfds spelling: `mnli` (matched) and `mnli_mismatched` for MNLI."""
    results = {}
    for split, scores in summary["evaluation"].items():
        results["mnli_mismatched" if split.endswith("mismatched") else task.name] = scores
    return results


def format_table(results: dict[str, dict[str, float]], average: float) -> str:
    """GLUE's table: each task's metrics times 100, then the average."""
    lines = ["| task | metrics | score |", "|---|---|---:|"]
    for name, scores in results.items():
        metrics = ", ".join(f"{metric} {100 * value:.2f}" for metric, value in scores.items())
        lines.append(f"| {name} | {metrics} | {100 * glue_task_score(scores):.2f} |")
    lines.append(f"| GLUE average | | {100 * average:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = JobParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--data-dir", help="GLUE's download: a directory holding CoLA/, MRPC/ ...")
    source.add_argument(
        "--tfds", action="store_true", help="read the tasks through tensorflow-datasets"
    )
    parser.add_argument("--tfds-data-dir", help="tfds data directory")
    parser.add_argument("--tasks", nargs="+", default=["all"], help="tasks, or all")
    add_config_arguments(
        parser, FinetuningConfig, required=("output_dir",), shown_defaults=recipe_defaults()
    )
    args = parser.parse_args(argv)
    tasks = parse_tasks(args.tasks, args.data_dir)
    overrides = config_overrides(args)
    output_dir = Path(overrides.pop("output_dir"))
    source = SplitSource(args.data_dir, args.tfds_data_dir)
    configs = {task.name: task_config(task, overrides, output_dir) for task in tasks}
    splits = {task.name: source.read_task(task) for task in tasks}

    def examples(name: str) -> int:
        train = splits[name].train
        return min(len(train), configs[name].max_train_examples or len(train))

    def sequences(name: str) -> float:
        return configs[name].epochs * examples(name)

    results, runs, started, trained = {}, {}, time.perf_counter(), 0.0
    for number, task in enumerate(tasks, start=1):
        config = configs[task.name]
        summary = finished_summary(config)
        if summary is None:
            print(
                f"[{number}/{len(tasks)}] {task.name}: {examples(task.name):,} examples, "
                f"{config.epochs:g} epochs, learning rate {config.run.learning_rate:g}, "
                f"batch {config.batch_size}, length {config.seq_length}",
                flush=True,
            )
            _, summary = finetune_glue_task(
                config, *splits[task.name], submission_dir=output_dir / "submission"
            )
            trained += sequences(task.name)
        results.update(task_results(task, summary))
        runs[task.name] = {
            key: summary[key] for key in ("train_seconds", "sequences_per_second", "train_examples")
        }
        # What the run trained in, and where it resumed (None from runs whose summary predates
        # the record).
        for key in ("precision", "resumed_after_epoch", "epoch_seconds"):
            runs[task.name][key] = summary.get(key)
        elapsed = time.perf_counter() - started
        remaining = sum(sequences(t.name) for t in tasks[number:])
        left = f"; about {_minutes(elapsed / trained * remaining)} left" if trained else ""
        scores = ", ".join(f"{m} {100 * v:.2f}" for m, v in results[task.name].items())
        print(f"[{number}/{len(tasks)}] {task.name}: {scores} ({_minutes(elapsed)}{left})")
    average = glue_average(results)
    report = {"tasks": results, "glue_average": average, "runs": runs}
    (output_dir / "results.json").write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    print(format_table(results, average))
    return report


if __name__ == "__main__":
    run_job(main)
