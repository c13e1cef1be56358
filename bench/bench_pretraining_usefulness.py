"""Is a pretraining run useful? Fine-tunes the sentiment classifier from the run's checkpoint
and from a random model of the same size, with the same recipe, and compares dev accuracy.

    python -m bench.bench_pretraining_usefulness --run runs/budget [--seeds 0 1] \\
        [--epochs 3 --seq-length 64 --learning-rate 1e-4 --pooling mean --embedding-rms 0.01]

The random model is the run's `BertConfig` initialised under the same seed and written as a
Google checkpoint with the run's vocabulary, so both go through `finetune_classifier`, the code
of `pipelines.finetune_classifier`. Prints one JSON line per model and seed, then the means.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

import keras

from keras_bert import BertEncoder
from keras_bert.checkpoints import encoder_variables, load_checkpoint, save_google_checkpoint
from keras_bert.data.classification import read_classification_file
from keras_bert.finetuning.classification import finetune_classifier
from keras_bert.finetuning.recipe import FinetuningConfig

DATA_DIR = Path("../shared/data/sentiment")


def random_checkpoint(
    run_checkpoint: Path, directory: Path, seed: int, keep_all_but_pooler: bool = False
) -> Path:
    """A checkpoint of the run's architecture and vocabulary with random weights; or, with
    `keep_all_but_pooler`, the run's weights with a random pooler (what a run without sentence
    pairs leaves since the next-sentence loss has no weight there: runs from before that
    change trained the pooler on a constant label)."""
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
        tensors, checkpoint.config, directory, vocabulary_file=run_checkpoint / "vocab.txt"
    )
    return directory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True, help="a pipelines.pretrain output")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--epochs", type=float, default=3)
    parser.add_argument("--seq-length", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--precision", default="float32")
    parser.add_argument("--pooling", default="first_token", help="the classifier's pooling")
    parser.add_argument(
        "--embedding-rms",
        type=float,
        help="rescale both models' embedding tables to this RMS first (FinetuningConfig)",
    )
    parser.add_argument(
        "--fresh-pooler",
        action="store_true",
        help="fine-tune the run's encoder with a random pooler (see random_checkpoint)",
    )
    arguments = parser.parse_args()

    train = read_classification_file(DATA_DIR / "movie_snippets.train.jsonl")
    dev = read_classification_file(DATA_DIR / "movie_snippets.dev.jsonl")
    work = Path(tempfile.mkdtemp())
    accuracies: dict[str, list[float]] = {"pretrained": [], "random": []}
    for seed in arguments.seeds:
        pretrained = arguments.run / "checkpoint"
        if arguments.fresh_pooler:
            pretrained = random_checkpoint(pretrained, work / f"pretrained{seed}", seed, True)
        checkpoints = {
            "pretrained": pretrained,
            "random": random_checkpoint(arguments.run / "checkpoint", work / f"random{seed}", seed),
        }
        for name, checkpoint in checkpoints.items():
            config = FinetuningConfig(
                checkpoint=str(checkpoint),
                output_dir=str(work / f"{name}{seed}"),
                seq_length=arguments.seq_length,
                batch_size=arguments.batch_size,
                epochs=arguments.epochs,
                run={
                    "learning_rate": arguments.learning_rate,
                    "precision": arguments.precision,
                    "seed": seed,
                },
                classifier_pooling=arguments.pooling,
                embedding_rms=arguments.embedding_rms,
            )
            _, summary = finetune_classifier(config, train, dev)
            accuracy = summary["evaluation"]["accuracy"]
            accuracies[name].append(accuracy)
            print(json.dumps({"model": name, "seed": seed, "dev_accuracy": accuracy}), flush=True)
    means = {name: statistics.mean(values) for name, values in accuracies.items()}
    print(
        json.dumps(
            {"mean_dev_accuracy": means, "points": 100 * (means["pretrained"] - means["random"])}
        )
    )


if __name__ == "__main__":
    main()
