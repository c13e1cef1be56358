"""Held-back accuracy of a classifier trained on raw strings against the fine-tuning pipeline's.

The text path is the three lines a user writes: `BertClassifier.from_checkpoint(checkpoint,
num_classes=2, seq_length=64)`, then `fit(train_texts, train_labels, batch_size, epochs)` on
the uncompiled model (it takes the fine-tuning recipe's optimizer, `FINETUNING_RUN`: AdamW 5e-5,
10% warm-up, linear decay, clipping at norm 1), texts tokenized in its input pipeline and
batched by length, shuffled each epoch. The pipeline path is `pipelines.finetune_classifier`'s
`finetune_classifier` with its default recipe (same batch size and rate; `--epochs` for both,
default the recipe's). Both train on the same examples under the same seed and are scored by
their own `predict` on the same raw strings of a split neither saw (default: the movie
snippets' dev split).

    python -m bench.bench_text_task_accuracy --seed 0 \\
        [--pipeline-model runs/sentiment_seed0/model.keras] [--max-train-examples 2000] \\
        [--epochs 2]

`--pipeline-model` scores a model the pipeline already trained with this seed on the same
examples (e.g. the Fine-tuning section's run) instead of training it again. The report gives
both accuracies, their difference, and two standard errors of it: that of the held-back
sample (from the examples on which the two models disagree; training noise not included) and
that of two independent accuracies on this many examples.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import keras
import numpy as np

from bench.bench_peer_finetuning import read_task
from keras_bert.data.classification import encode_labels
from keras_bert.finetuning.classification import finetune_classifier
from keras_bert.finetuning.recipe import FinetuningConfig
from keras_bert.models import BertClassifier
from keras_bert.training.recipes import CLASSIFIER_RECIPE
from pipelines.common import default_checkpoint


def train_on_text(config: FinetuningConfig, train, label_names: list[str]) -> BertClassifier:
    """`BertClassifier.fit` on the raw training texts, as a user calls it, under the run's seed."""
    keras.utils.set_random_seed(config.run.seed)
    classifier = BertClassifier.from_checkpoint(
        config.checkpoint,
        num_classes=len(label_names),
        label_names=label_names,
        seq_length=config.seq_length,
        dropout_rate=config.dropout_rate,
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seq-length", type=int, default=64)
    parser.add_argument("--max-train-examples", type=int, help="train on N examples (seeded)")
    parser.add_argument("--epochs", type=float, default=CLASSIFIER_RECIPE["epochs"])
    parser.add_argument("--pipeline-model", help="a .keras the pipeline trained (seed, examples)")
    parser.add_argument("--output", help="also write the report here (JSON)")
    args = parser.parse_args()

    train, held_back, label_names = read_task("sentiment")
    config = FinetuningConfig(
        checkpoint=default_checkpoint(),
        output_dir=tempfile.mkdtemp(prefix="text_task_accuracy_"),
        seq_length=args.seq_length,
        max_train_examples=args.max_train_examples,
        epochs=args.epochs,
        run={"seed": args.seed},
    )
    if args.pipeline_model:
        pipeline_model = keras.saving.load_model(args.pipeline_model)
        pipeline_seconds = None
    else:
        pipeline_model, summary = finetune_classifier(config, train, label_names=label_names)
        pipeline_seconds = summary["train_seconds"]
    if config.max_train_examples:  # the pipeline's draw of its examples
        train = train.sample(config.max_train_examples, seed=config.run.seed)

    start = time.perf_counter()
    text_model = train_on_text(config, train, label_names)
    text_seconds = time.perf_counter() - start

    labels = encode_labels(held_back.labels, label_names)
    comparison = paired_comparison(
        labels,
        text_model.predict(held_back.texts, verbose=0).argmax(-1),
        pipeline_model.predict(held_back.texts, verbose=0).argmax(-1),
    )
    report = {
        "seed": args.seed,
        "train_examples": len(train),
        "held_back_examples": len(held_back),
        "epochs": config.epochs,
        "batch_size": config.batch_size,
        "text_fit_seconds": round(text_seconds, 1),
        "pipeline_train_seconds": pipeline_seconds,
        **{
            name.replace("first", "text").replace("second", "pipeline"): value
            for name, value in comparison.items()
        },
    }
    print(json.dumps(report, indent=2))
    if args.output:
        with open(args.output, "w") as file:
            json.dump(report, file, indent=2)


if __name__ == "__main__":
    main()
