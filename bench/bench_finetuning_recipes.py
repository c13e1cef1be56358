"""The search behind the benchmarks' recipes: each setting of a grid fine-tuned by the job a user
runs (`pipelines.glue`, `pipelines.finetune_ner`, `pipelines.finetune_qa`) on a task's train
split, scored on its dev split, over seeds; a table of each setting's mean, spread and speed.

    python -m bench.bench_finetuning_recipes --tasks rte mrpc --learning-rates 2e-5 5e-5 1e-4 \\
        --epochs 3 5 --seeds 0 1 2 --output-root runs/recipes

Tasks: the GLUE tasks of `--glue-dir` (tfds spelling), `conll2003` (eng.train, scored on
eng.testa) and `squad` (the shared SQuAD split). Every run is an ordinary job process in
`<output-root>/<task>/<setting>/seed<N>` (resumable; a finished run is read back, not run
again), and each finished run is appended to `--results` (`bench/results/recipe_screens.jsonl`,
committed: a screen outlives the machine it ran on; a run recorded there is not run again), so
`--report-only` rebuilds the table. Settings not given are the job's defaults (the recipe of
`keras_bert.training.recipes`).
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import statistics
import subprocess
import sys
from pathlib import Path

from bench.results_lines import append_record, git_revision, read_records
from keras_bert.cpu import cpu_summary

BENCHMARKS = Path("../shared/data/benchmarks")
RESULTS = Path(__file__).parent / "results" / "recipe_screens.jsonl"
# The flag each grid axis sets on the job's command line.
AXES = {
    "learning_rates": "--learning-rate",
    "epochs": "--epochs",
    "batch_sizes": "--batch-size",
    "seq_lengths": "--seq-length",
    "warmup_fractions": "--warmup-fraction",
    "poolings": "--classifier-pooling",
    "document_contexts": "--document-context",
    "doc_strides": "--doc-stride",
    "max_train_examples": "--max-train-examples",
    "precisions": "--precision",
}


def job_command(task: str, output_dir: Path, glue_dir: Path) -> list[str]:
    """The job and data flags that fine-tune `task` into `output_dir`."""
    if task == "conll2003":
        data = [
            "--train",
            BENCHMARKS / "conll2003/eng.train",
            "--eval",
            BENCHMARKS / "conll2003/eng.testa",
        ]
        job = "pipelines.finetune_ner"
    elif task == "squad":
        data = [
            "--train",
            BENCHMARKS / "squad/squad-v1.1-train.json",
            "--eval",
            BENCHMARKS / "squad/squad-v1.1-dev.json",
        ]
        job = "pipelines.finetune_qa"
    else:
        data, job = ["--data-dir", glue_dir, "--tasks", task], "pipelines.glue"
    return [sys.executable, "-m", job, *map(str, data), "--output-dir", str(output_dir)]


def run_scores(task: str, output_dir: Path) -> dict | None:
    """A finished run's dev scores (metric by name), speed and precision; None if it has not
    finished."""
    if task in ("conll2003", "squad"):
        path = output_dir / "metrics.json"
        if not path.is_file():
            return None
        summary = json.loads(path.read_text("utf-8"))
        evaluation = summary.get("evaluation")
        if evaluation is None:
            return None
        names = ("f1", "precision", "recall") if task == "conll2003" else ("exact_match", "f1")
        scores = {name: evaluation[name] for name in names}
    else:
        path = output_dir / "results.json"
        if not path.is_file():
            return None
        report = json.loads(path.read_text("utf-8"))
        summary, scores = report["runs"][task], report["tasks"][task]
    return {
        "scores": scores,
        "train_seconds": summary["train_seconds"],
        "sequences_per_second": summary["sequences_per_second"],
        # The policy trained in, and with `--precision auto` what decided it.
        "precision": summary.get("precision"),
    }


def settings_of(args: argparse.Namespace) -> list[dict[str, str]]:
    """Every combination of the axes given (flag → value)."""
    axes = {AXES[name]: values for name, values in vars(args).items() if name in AXES and values}
    return [dict(zip(axes, values, strict=True)) for values in itertools.product(*axes.values())]


def setting_name(setting: dict[str, str]) -> str:
    return "_".join(f"{flag.strip('-')}={value}" for flag, value in setting.items()) or "recipe"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", required=True)
    parser.add_argument("--seeds", nargs="+", default=["0"])
    for name in AXES:
        parser.add_argument("--" + name.replace("_", "-"), nargs="+", dest=name)
    parser.add_argument("--glue-dir", type=Path, default=BENCHMARKS / "glue")
    parser.add_argument("--output-root", type=Path, default=Path("runs/recipes"))
    parser.add_argument("--report-only", action="store_true", help="the table of finished runs")
    parser.add_argument("--results", type=Path, default=RESULTS, help="JSON lines of the runs")
    args = parser.parse_args(argv)
    print(cpu_summary(), flush=True)
    recorded = {(r["task"], r["setting"], r["seed"]): r for r in read_records(args.results)}
    rows = []
    for task in args.tasks:
        for setting in settings_of(args):
            runs = []
            for seed in args.seeds:
                key = (task, setting_name(setting), seed)
                output_dir = args.output_root / task / key[1] / f"seed{seed}"
                result = recorded.get(key) or run_scores(task, output_dir)
                if result is None and not args.report_only:
                    flags = [str(part) for item in setting.items() for part in item]
                    command = [*job_command(task, output_dir, args.glue_dir), *flags]
                    subprocess.run([*command, "--seed", seed], check=True)
                    result = run_scores(task, output_dir)
                if result is not None and key not in recorded:
                    record = {"task": task, "setting": key[1], "seed": seed, **result}
                    record.update(cpu=cpu_summary(), revision=git_revision())
                    record["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
                    append_record(args.results, record)
                    recorded[key] = result = record
                if result is not None:
                    runs.append(result)
                    print(json.dumps(result), flush=True)
            if runs:
                rows.append((task, setting_name(setting), runs))
    print("\n| task | setting | seeds | metric | per seed | mean | sequences/s |")
    print("|---|---|---:|---|---|---:|---:|")
    for task, name, runs in rows:
        for metric in runs[0]["scores"]:
            values = [run["scores"][metric] for run in runs]
            per_seed = ", ".join(f"{value:.4g}" for value in values)
            speed = statistics.median(run["sequences_per_second"] for run in runs)
            print(f"| {task} | {name} | {len(runs)} | {metric} | {per_seed} "
                  f"| {statistics.mean(values):.4f} | {speed:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
