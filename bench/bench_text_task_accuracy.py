"""The README's `fit` on raw strings against the classifier job, seed by seed, on held-out text.

The text path is what a user writes: `keras.utils.set_random_seed(seed)`,
`BertClassifier.from_checkpoint(checkpoint, num_classes=2, seq_length=64)`, then
`fit(train_texts, train_labels, batch_size=32, epochs=2)` on the uncompiled model (it takes the
fine-tuning recipe's optimizer, `FINETUNING_RUN`: AdamW 5e-5, 10% warm-up, linear decay,
clipping at norm 1; texts tokenized in its input pipeline, batched by length, shuffled each
epoch). The job's path is `pipelines.finetune_classifier`'s `finetune_classifier` with
`--seed seed --seq-length 64 --epochs 2`. Both train on the same seeded sample of the movie
snippets' training split and are scored by their own `predict` on the raw strings of the dev
split, which neither saw.

    python -m bench.bench_text_task_accuracy --seeds 0 1 2 --max-train-examples 2000 --epochs 2

Each seed's comparison is appended to `bench/results/fit_parity.jsonl` as one JSON line: both
accuracies, their difference with two standard errors of it (that of the held-out sample, from
the examples on which the two models disagree, training noise not included; and that of two
independent accuracies on this many examples), the largest difference of their logits, the
settings, the commit and the CPU. A seed recorded with the same settings at this commit is not
run again, so a stopped campaign resumes where it was.
"""

from __future__ import annotations

import argparse
import datetime
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import keras
import numpy as np

from bench.bench_peer_finetuning import read_task
from bench.results_lines import append_record, git_revision, read_records
from keras_bert.data.classification import encode_labels
from keras_bert.finetuning.classification import finetune_classifier
from keras_bert.finetuning.recipe import FinetuningConfig
from keras_bert.models import BertClassifier
from keras_bert.training.recipes import CLASSIFIER_RECIPE
from pipelines.common import default_checkpoint

RESULTS = Path(__file__).parent / "results" / "fit_parity.jsonl"


def train_on_text(config: FinetuningConfig, train, label_names: list[str]) -> BertClassifier:
    """`BertClassifier.fit` on the raw training texts, as a user calls it, under the run's seed."""
    keras.utils.set_random_seed(config.run.seed)
    classifier = BertClassifier.from_checkpoint(
        config.checkpoint,
        num_classes=len(label_names),
        label_names=label_names,
        seq_length=config.seq_length,
    )
    classifier.fit(
        train.texts,
        encode_labels(train.labels, label_names),
        batch_size=config.batch_size,
        epochs=int(config.epochs),
        verbose=2,
    )
    return classifier


def paired_comparison(labels: np.ndarray, first: np.ndarray, second: np.ndarray) -> dict:
    """Accuracies of two predictions of the same labels, their difference and its standard
    errors: paired (from the disagreements) and as two independent samples.

    Example:
    >>> result = paired_comparison(np.array([1, 0, 1, 1]), np.array([1, 0, 0, 1]), np.ones(4))
    >>> result["first_accuracy"], result["second_accuracy"], result["difference"]
    (0.75, 0.75, 0.0)
    >>> result["only_first_right"], result["only_second_right"]
    (1, 1)
    """
    first_right, second_right = first == labels, second == labels
    count = len(labels)
    only_first = int(np.sum(first_right & ~second_right))
    only_second = int(np.sum(second_right & ~first_right))
    difference = (only_first - only_second) / count
    paired_variance = ((only_first + only_second) / count - difference**2) / count
    mean_accuracy = (first_right.mean() + second_right.mean()) / 2
    return {
        "first_accuracy": float(first_right.mean()),
        "second_accuracy": float(second_right.mean()),
        "difference": float(difference),
        "only_first_right": only_first,
        "only_second_right": only_second,
        "paired_standard_error": float(np.sqrt(paired_variance)),
        "independent_standard_error": float(
            np.sqrt(2 * mean_accuracy * (1 - mean_accuracy) / count)
        ),
    }


def compare(config: FinetuningConfig, revision: str) -> dict:
    """One seed's comparison: the job, then `fit` on the job's sample of the training texts,
    both scored on the dev split; `revision` is the code's (`git_revision` as the run began)."""
    from keras_bert.cpu import cpu_summary

    train, held_out, label_names = read_task("sentiment")
    job_model, summary = finetune_classifier(config, train, label_names=label_names)
    if config.max_train_examples:  # the job's draw of its examples
        train = train.sample(config.max_train_examples, seed=config.run.seed)
    start = time.perf_counter()
    text_model = train_on_text(config, train, label_names)
    text_seconds = time.perf_counter() - start

    text_logits = text_model.predict(held_out.texts, verbose=0)
    job_logits = job_model.predict(held_out.texts, verbose=0)
    labels = encode_labels(held_out.labels, label_names)
    comparison = paired_comparison(labels, text_logits.argmax(-1), job_logits.argmax(-1))
    return {
        "seed": config.run.seed,
        "settings": settings_of(config),
        "train_examples": len(train),
        "held_out_examples": len(held_out),
        **{
            name.replace("first", "text").replace("second", "job"): value
            for name, value in comparison.items()
        },
        "largest_logit_difference": float(np.abs(text_logits - job_logits).max()),
        "text_fit_seconds": round(text_seconds, 1),
        "job_train_seconds": summary["train_seconds"],
        "revision": revision,
        "cpu": cpu_summary(),
        "finished": datetime.datetime.now().isoformat(timespec="seconds"),
    }


def settings_of(config: FinetuningConfig) -> dict:
    """What a comparison's runs share beside the seed."""
    return {
        "max_train_examples": config.max_train_examples,
        "epochs": config.epochs,
        "seq_length": config.seq_length,
        "batch_size": config.batch_size,
    }


def seeds_to_go(
    seeds: Sequence[int], settings: dict, records: Sequence[dict], revision: str
) -> list[int]:
    """The seeds of `seeds` that `records` hold no comparison of with `settings` at `revision`.

    Example:
    >>> settings = {"epochs": 2}
    >>> done = [{"seed": 0, "settings": settings, "revision": "a1b2c3d"}]
    >>> seeds_to_go([0, 1], settings, done, "a1b2c3d"), seeds_to_go([0, 1], settings, done, "e4f")
    ([1], [0, 1])
    """
    done = {
        record["seed"]
        for record in records
        if record["settings"] == settings and record["revision"] == revision
    }
    return [seed for seed in seeds if seed not in done]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--seq-length", type=int, default=64)
    parser.add_argument("--max-train-examples", type=int, help="train on N examples (seeded)")
    parser.add_argument("--epochs", type=float, default=CLASSIFIER_RECIPE["epochs"])
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()

    scratch = tempfile.TemporaryDirectory(prefix="text_task_accuracy_")
    configs = {
        seed: FinetuningConfig(
            checkpoint=default_checkpoint(),
            output_dir=f"{scratch.name}/seed{seed}",
            seq_length=args.seq_length,
            max_train_examples=args.max_train_examples,
            epochs=args.epochs,
            run={"seed": seed},
        )
        for seed in args.seeds
    }
    settings = settings_of(next(iter(configs.values())))
    revision = git_revision()
    todo = seeds_to_go(args.seeds, settings, read_records(args.results), revision)
    print(f"{len(todo)} seeds to go at {revision}, appended to {args.results}", flush=True)
    with scratch:
        for seed in todo:
            record = compare(configs[seed], revision)
            append_record(args.results, record)
            print(json.dumps(record, indent=2), flush=True)


if __name__ == "__main__":
    main()
