"""The budget recipe and what each of its parts is worth: `pipelines.pretrain` runs of
`pipelines/recipes/budget_tiny.json` with one part undone at a time, and BERT's recipe at the
same size, each scored by held-out `accuracy_at_mask` at every checkpoint.

    python -m bench.bench_pretraining_recipe --output-root runs/ablations \\
        [--variants recipe no_local_bias ...] [--seeds 0 1] [--total-steps 1000] [--parallel 2]

Every run is an ordinary `pipelines.pretrain` process (resumable; a finished run is not run
again), so the table can be rebuilt from the run directories with `--report-only`.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

RECIPE = "pipelines/recipes/budget_tiny.json"
_NO_RELATIVE_ATTENTION = {"relative_attention_buckets": 0, "local_attention_bias": 0.0}
_BERT_CORRUPTION = ["--mask-token-rate", "0.8", "--random-token-rate", "0.1"]
# Flags over the recipe: each variant undoes one part of it (or two, for BERT's recipe).
VARIANTS: dict[str, list[str]] = {
    "recipe": [],
    "no_local_bias": ["--model-config", json.dumps({"local_attention_bias": 0.0})],
    "no_relative_attention": ["--model-config", json.dumps(_NO_RELATIVE_ATTENTION)],
    "post_layer_norm": ["--model-config", json.dumps({"pre_layer_norm": False})],
    "bert_corruption": _BERT_CORRUPTION,
    "masking_rate_40": ["--masked-lm-prob", "0.4", "--max-predictions-per-seq", "52"],
    "with_nsp": ["--next-sentence-prediction", "true"],
    "bert_recipe": [
        "--model-config",
        json.dumps(
            {
                **_NO_RELATIVE_ATTENTION,
                "pre_layer_norm": False,
                "dropout_rate": 0.1,
                "attention_dropout_rate": 0.1,
            }
        ),
        "--next-sentence-prediction",
        "true",
        *_BERT_CORRUPTION,
    ],
}


def run_directory(root: Path, variant: str, seed: int) -> Path:
    return root / f"{variant}_seed{seed}"


def run(root: Path, variant: str, seed: int, total_steps: int) -> None:
    command = [sys.executable, "-m", "pipelines.pretrain", "--config", RECIPE]
    command += ["--output-dir", str(run_directory(root, variant, seed)), "--seed", str(seed)]
    command += ["--total-steps", str(total_steps), "--verbose", "2", *VARIANTS[variant]]
    log = run_directory(root, variant, seed).with_suffix(".log")
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as output:
        subprocess.run(command, stdout=output, stderr=subprocess.STDOUT, check=True)


def report(root: Path, variants: list[str], seeds: list[int]) -> None:
    """A markdown table: held-out accuracy at [MASK] per checkpoint, and the training seconds."""
    rows = {}
    for variant in variants:
        for seed in seeds:
            metrics = run_directory(root, variant, seed) / "metrics.csv"
            if metrics.is_file():
                rows[variant, seed] = list(csv.DictReader(metrics.open()))
    if not rows:
        return
    checkpoints = max(len(records) for records in rows.values())
    variant, seed = next(iter(rows))
    run_config = json.loads((run_directory(root, variant, seed) / "config.json").read_text())
    every = run_config["steps_per_checkpoint"]
    steps = " | ".join(f"step {every * (c + 1)}" for c in range(checkpoints))
    print(f"| variant | seed | {steps} | seconds |")
    print("|---|---:|" + "---:|" * (checkpoints + 1))
    for (variant, seed), records in rows.items():
        accuracies = [f"{float(r['heldout_accuracy_at_mask']):.3f}" for r in records]
        seconds = f"{float(records[-1]['train_seconds']):.0f}" if records else ""
        print(f"| {variant} | {seed} | " + " | ".join(accuracies) + f" | {seconds} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-root", type=Path, required=True)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--total-steps", type=int, default=1000)
    parser.add_argument("--parallel", type=int, default=1, help="runs at a time")
    parser.add_argument("--report-only", action="store_true")
    arguments = parser.parse_args()
    if not arguments.report_only:
        jobs = [(v, s) for s in arguments.seeds for v in arguments.variants]
        with ThreadPoolExecutor(arguments.parallel) as pool:
            for result in [
                pool.submit(run, arguments.output_root, v, s, arguments.total_steps)
                for v, s in jobs
            ]:
                result.result()
    report(arguments.output_root, arguments.variants, arguments.seeds)


if __name__ == "__main__":
    main()
