"""Is a pretraining run useful? A campaign that outlives a session: pretraining runs of fixed
step counts, then the sentiment classifier fine-tuned from each run's checkpoint and from a
random model of the same architecture, seed by seed, each run one line of a results file.

    python -m bench.bench_pretraining_usefulness pretrain --variants mlm electra
    python -m bench.bench_pretraining_usefulness finetune --variants mlm electra \\
        --seeds 0 1 2 --epochs 1 3               # the job's defaults; one line per model, seed
    python -m bench.bench_pretraining_usefulness finetune --variants mlm --learning-rate 5e-4 \\
        --pooling mean --embedding-rms 0.01      # other settings: their own lines
    python -m bench.bench_pretraining_usefulness table [--write BENCHMARKS.md]

`pretrain` runs `pipelines.pretrain` on a variant's recipe (`VARIANTS`) with its time budget
off (`total_steps` exactly, whatever the CPU's load) into `--runs-dir/<variant>` (resumable:
rerun after a stop) and records the run in `bench/results/pretraining_runs.jsonl`: held-out
`accuracy_at_mask` at every checkpoint, the precision, the training seconds, the CPU, the load.
`finetune` fine-tunes each variant's run and a random model (the run's `BertConfig` drawn under
the seed, its vocabulary) with `keras_bert.finetuning.classification.finetune_classifier`, the
code of `pipelines.finetune_classifier`, on the movie snippets; defaults are the job's
(`FinetuningConfig` and `CLASSIFIER_RECIPE`: lr 5e-5, 10% warm-up, first-token head, length
128); a line of `bench/results/pretraining_usefulness.jsonl` per model, seed, epochs and
settings, skipped when recorded. `table` prints the mean dev accuracy of each model over its
seeds and the differences; with `--write` it replaces the text between
`<!-- pretraining_usefulness -->` and `<!-- /pretraining_usefulness -->` in the file.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from bench.bench_peer_finetuning import git_revision, read_records

RESULTS_DIR = Path(__file__).parent / "results"
PRETRAINING_RESULTS = "pretraining_runs.jsonl"
FINETUNING_RESULTS = "pretraining_usefulness.jsonl"
DATA_DIR = Path("../shared/data/sentiment")
MARKERS = ("<!-- pretraining_usefulness -->", "<!-- /pretraining_usefulness -->")
# Each pretraining variant: its recipe and the flags over it.
VARIANTS: dict[str, tuple[str, list[str]]] = {
    "mlm": ("pipelines/recipes/budget_tiny.json", []),
    "mlm_bert_corruption": (
        "pipelines/recipes/budget_tiny.json",
        ["--mask-token-rate", "0.8", "--random-token-rate", "0.1"],
    ),
    "electra": ("pipelines/recipes/electra_tiny.json", []),
}
# The fine-tuning settings a line records (the rest are the job's defaults).
SETTINGS = ("learning_rate", "pooling", "embedding_rms", "seq_length", "precision")


def random_checkpoint(
    run_checkpoint: Path, directory: Path, seed: int, keep_all_but_pooler: bool = False
) -> Path:
    """A checkpoint of the run's architecture and vocabulary with random weights; or, with
    `keep_all_but_pooler`, the run's weights with a random pooler (what a run without sentence
    pairs leaves since the next-sentence loss has no weight there: runs from before that
    change trained the pooler on a constant label)."""
    import keras

    from keras_bert import BertEncoder
    from keras_bert.checkpoints import encoder_variables, load_checkpoint, save_google_checkpoint

    checkpoint = load_checkpoint(run_checkpoint)
    keras.utils.set_random_seed(seed)
    encoder = BertEncoder(checkpoint.config)
    tensors = {
        name: keras.ops.convert_to_numpy(v) for name, v in encoder_variables(encoder).items()
    }
    if keep_all_but_pooler:
        tensors = {
            name: value if name.startswith("bert/pooler/") else checkpoint.tensors[name]
            for name, value in tensors.items()
        }
    save_google_checkpoint(
        tensors, checkpoint.config, directory, vocabulary_file=checkpoint.vocabulary_file
    )
    return directory


def append_record(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as results:
        results.write(json.dumps(record) + "\n")


def _provenance() -> dict:
    from keras_bert.cpu import cpu_summary

    return {
        "cpu": cpu_summary(),
        "load_average": round(os.getloadavg()[0], 2),
        "revision": git_revision(),
        "finished": datetime.datetime.now().isoformat(timespec="seconds"),
    }


def pretraining_record(variant: str, run_dir: Path, precision: str) -> dict:
    """A finished run as a results line: its recipe, steps and held-out scores."""
    recipe, flags = VARIANTS[variant]
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    config = json.loads((run_dir / "config.json").read_text("utf-8"))
    return {
        "variant": variant,
        "recipe": recipe,
        "flags": flags,
        "precision": precision,
        "total_steps": config["total_steps"],
        "steps_per_checkpoint": config["steps_per_checkpoint"],
        "heldout_accuracy_at_mask": [
            round(float(row["heldout_accuracy_at_mask"]), 4) for row in rows
        ],
        "train_seconds": round(float(rows[-1]["train_seconds"]), 1),
        **_provenance(),
    }


def pretrain(arguments: argparse.Namespace) -> None:
    results = arguments.results_dir / PRETRAINING_RESULTS
    recorded = {record["variant"] for record in read_records(results)}
    for variant in arguments.variants:
        run_dir = arguments.runs_dir / variant
        if variant in recorded and not arguments.again:
            continue
        if not (run_dir / "pretrainer.keras").is_file():
            recipe, flags = VARIANTS[variant]
            command = [sys.executable, "-m", "pipelines.pretrain", "--config", recipe]
            command += ["--output-dir", str(run_dir), "--time-budget-minutes", "none"]
            command += ["--precision", arguments.precision, "--verbose", "2", *flags]
            run_dir.mkdir(parents=True, exist_ok=True)
            with (run_dir.parent / f"{variant}.log").open("a") as log:
                subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=True)
        record = pretraining_record(variant, run_dir, arguments.precision)
        append_record(results, record)
        print(json.dumps(record), flush=True)


def settings_of(arguments: argparse.Namespace) -> dict:
    return {name: getattr(arguments, name) for name in SETTINGS}


def finetune(arguments: argparse.Namespace) -> None:
    from keras_bert.data.classification import read_classification_file
    from keras_bert.finetuning.classification import finetune_classifier
    from keras_bert.finetuning.recipe import FinetuningConfig

    train = read_classification_file(DATA_DIR / "movie_snippets.train.jsonl")
    dev = read_classification_file(DATA_DIR / "movie_snippets.dev.jsonl")
    settings = settings_of(arguments)
    results = arguments.results_dir / FINETUNING_RESULTS
    done = {
        (r["variant"], r["model"], r["seed"], r["epochs"])
        for r in read_records(results)
        if r["settings"] == settings
    }
    pretraining_runs = read_records(arguments.results_dir / PRETRAINING_RESULTS)
    pretrained_runs = {r["variant"]: r for r in pretraining_runs}
    work = Path(tempfile.mkdtemp())
    for variant in arguments.variants:
        run_checkpoint = arguments.runs_dir / variant / "checkpoint"
        for seed in arguments.seeds:
            for epochs in arguments.epochs:
                for model in arguments.models:
                    if (variant, model, seed, epochs) in done:
                        continue
                    checkpoint = run_checkpoint
                    if model == "random":
                        checkpoint = random_checkpoint(run_checkpoint, work / f"random{seed}", seed)
                    config = FinetuningConfig(
                        checkpoint=str(checkpoint),
                        output_dir=str(work / f"{variant}_{model}_{seed}_{epochs}"),
                        seq_length=arguments.seq_length,
                        epochs=epochs,
                        classifier_pooling=arguments.pooling,
                        embedding_rms=arguments.embedding_rms,
                        run={
                            "learning_rate": arguments.learning_rate,
                            "precision": arguments.precision,
                            "seed": seed,
                        },
                    )
                    _, summary = finetune_classifier(config, train, dev)
                    record = {
                        "variant": variant,
                        "model": model,
                        "seed": seed,
                        "epochs": epochs,
                        "settings": settings,
                        "dev_accuracy": round(summary["evaluation"]["accuracy"], 5),
                        "train_seconds": summary["train_seconds"],
                        "pretraining_finished": pretrained_runs.get(variant, {}).get("finished"),
                        **_provenance(),
                    }
                    append_record(results, record)
                    print(json.dumps(record), flush=True)


def _setting_label(settings: dict) -> str:
    from keras_bert.finetuning.recipe import FinetuningConfig

    defaults = {
        "learning_rate": FinetuningConfig("", "").run.learning_rate,
        "pooling": "first_token",
        "embedding_rms": None,
        "seq_length": 128,
        "precision": "float32",
    }
    changed = [f"{name} {value}" for name, value in settings.items() if defaults[name] != value]
    return ", ".join(changed) or "the job's defaults"


def table(records: list[dict]) -> str:
    """Per setting and epochs: each model's mean dev accuracy over its seeds, and the points by
    which each pretrained model leads the random model of its architecture (and ELECTRA the
    masked LM), from the seeds both have."""
    groups: dict[tuple, dict[tuple[str, str], dict[int, float]]] = defaultdict(dict)
    for record in records:
        key = (json.dumps(record["settings"], sort_keys=True), record["epochs"])
        scores = groups[key].setdefault((record["variant"], record["model"]), {})
        scores[record["seed"]] = 100 * record["dev_accuracy"]  # the last line of a seed
    lines = [
        "| fine-tuning | epochs | model | dev accuracy per seed | mean | random model | lead "
        "| lead over mlm |",
        "|---|---:|---|---|---:|---:|---:|---:|",
    ]
    for (settings, epochs), models in sorted(groups.items()):
        label = _setting_label(json.loads(settings))
        for (variant, model), scores in sorted(models.items()):
            if model != "pretrained":
                continue
            random = models.get((variant, "random"), {})
            seeds = sorted(set(scores) & set(random)) or sorted(scores)
            mean = statistics.mean(scores[seed] for seed in seeds)
            random_mean = statistics.mean(random[s] for s in seeds) if random else None
            mlm = models.get(("mlm", "pretrained"), {})
            mlm_seeds = sorted(set(scores) & set(mlm))
            over_mlm = (
                mean - statistics.mean(mlm[s] for s in mlm_seeds)
                if variant != "mlm" and mlm_seeds
                else None
            )
            per_seed = ", ".join(f"{seed}: {scores[seed]:.2f}" for seed in seeds)
            lines.append(
                f"| {label} | {epochs:g} | {variant} | {per_seed} | **{mean:.2f}** | "
                + (f"{random_mean:.2f} | {mean - random_mean:+.2f}" if random else " | ")
                + (f" | {over_mlm:+.2f} |" if over_mlm is not None else " | |")
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    pretrain_parser = commands.add_parser("pretrain", help="run and record pretraining runs")
    finetune_parser = commands.add_parser("finetune", help="fine-tune runs and random models")
    table_parser = commands.add_parser("table", help="the table of the recorded fine-tuning")
    for command in (pretrain_parser, finetune_parser):
        command.add_argument("--variants", nargs="+", choices=list(VARIANTS), required=True)
        command.add_argument("--runs-dir", type=Path, default=Path("runs/usefulness"))
    pretrain_parser.add_argument("--precision", default="mixed_bfloat16")
    pretrain_parser.add_argument("--again", action="store_true", help="record a run again")
    finetune_parser.add_argument("--models", nargs="+", default=["pretrained", "random"])
    finetune_parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    finetune_parser.add_argument("--epochs", type=float, nargs="+", default=[3.0])
    finetune_parser.add_argument("--learning-rate", type=float, default=5e-5)
    finetune_parser.add_argument("--pooling", default="first_token")
    finetune_parser.add_argument("--embedding-rms", type=float)
    finetune_parser.add_argument("--seq-length", type=int, default=128)
    finetune_parser.add_argument("--precision", default="float32")
    table_parser.add_argument("--write", type=Path, help="a file with the table's markers")
    for command in (pretrain_parser, finetune_parser, table_parser):
        command.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    arguments = parser.parse_args()
    if arguments.command == "pretrain":
        pretrain(arguments)
    elif arguments.command == "finetune":
        finetune(arguments)
    else:
        text = table(read_records(arguments.results_dir / FINETUNING_RESULTS))
        if arguments.write:
            from bench.field_benchmarks import write_between_markers

            write_between_markers(arguments.write, text, MARKERS)
        print(text)


if __name__ == "__main__":
    main()
