"""Distilled students beside their teacher, as TF Serving runs them: exported raw-string
classifiers, timed side by side in one process.

Exports every `NAME=PATH/model.keras` as `pipelines.export --task classifier` does
(`ClassifierServing`, the same `--seq-length` and padding for all: each batch padded to its
length bucket, the export's default, or `--padding fixed` to `--seq-length`; `--jit-compile`
for XLA exports; the vocabulary of `--checkpoint`), loads each export back with
`tf.saved_model.load` and, on the real dev sentences (movie-review snippets):

- dev accuracy of each export's `label` against the gold labels;
- batch-1 latency p50/p99 over --requests calls and batch-32 sentences/s over --batches
  batches, the models alternating call by call (so that they see the same machine load; with
  `--schedule blocks` each model's calls in a row, as a server running that model alone sees
  them, the order rotating from round to round), repeated --rounds times; the table gives the
  median over rounds, and the ratios to the first model are the medians of the per-round
  ratios.

    .venv/bin/python -m bench.bench_distillation teacher=runs/teacher/model.keras \\
        l3=runs/student_l3/model.keras l2=runs/student_l2/model.keras
"""

import argparse
import tempfile
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from bench.bench_serving import (
    SCHEDULES,
    load_dev,
    request_batches,
    scheduled_timings,
)
from keras_bert.cpu import cpu_summary
from keras_bert.export import export_for_serving, serving_module
from keras_bert.text import BertPreprocessor
from pipelines.common import default_checkpoint


def export_classifier(model_path: str, preprocessor, base_dir: Path, name: str, **options):
    """The export's `serving_default` signature and the model's parameter count; `options`
    go to `serving_module` (`buckets`, `jit_compile`)."""
    model = keras.saving.load_model(model_path, compile=False)
    module = serving_module(model, preprocessor, **options)
    export_dir = export_for_serving(module, base_dir, name)
    return tf.saved_model.load(str(export_dir)).signatures["serving_default"], model.count_params()


def accuracy(signature, texts: list[str], labels: list[str], batch_size: int = 64) -> float:
    predicted = []
    for start in range(0, len(texts), batch_size):
        outputs = signature(text=tf.constant(texts[start : start + batch_size]))
        predicted += [label.decode() for label in outputs["label"].numpy()]
    return float(np.mean(np.array(predicted) == np.array(labels)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+", help="NAME=PATH/model.keras; the first is the base")
    parser.add_argument("--checkpoint", help="vocabulary (default: MiniLM-L6's)")
    parser.add_argument("--seq-length", type=int, default=64)
    parser.add_argument("--requests", type=int, default=200, help="batch-1 calls per round")
    parser.add_argument("--batches", type=int, default=20, help="batch-32 calls per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--padding",
        choices=["buckets", "fixed"],
        default="buckets",
        help="pad each batch to its length bucket (the export's default) or to --seq-length",
    )
    parser.add_argument("--jit-compile", action="store_true", help="XLA-compiled exports")
    parser.add_argument(
        "--schedule",
        choices=SCHEDULES,
        default="interleaved",
        help="models alternating call by call, or each model's calls in a row (blocks, the "
        "order rotating from round to round): see bench_serving.scheduled_timings",
    )
    args = parser.parse_args()

    paths = dict(model.split("=", 1) for model in args.models)
    preprocessor = BertPreprocessor.from_checkpoint(
        args.checkpoint or default_checkpoint(), seq_length=args.seq_length
    )
    texts, labels = load_dev()
    with tempfile.TemporaryDirectory() as base_dir:
        exported = {
            name: export_classifier(
                path,
                preprocessor,
                Path(base_dir),
                name,
                buckets=(args.seq_length,) if args.padding == "fixed" else None,
                jit_compile=args.jit_compile,
            )
            for name, path in paths.items()
        }
        signatures = {name: signature for name, (signature, _) in exported.items()}
        scores = {
            name: accuracy(signature, texts, labels) for name, signature in signatures.items()
        }
        rounds = []
        names = list(signatures)
        for round_index in range(args.rounds):
            results = {}
            shift = round_index % len(names)
            for batch_size, count in [(1, args.requests), (32, args.batches)]:
                batches = [tf.constant(b) for b in request_batches(texts, batch_size, count)]
                calls = {
                    name: [lambda s=signatures[name], b=batch: s(text=b) for batch in batches]
                    for name in names[shift:] + names[:shift]
                }
                results[batch_size] = scheduled_timings(calls, args.schedule)
            rounds.append(
                {
                    name: {
                        "p50": np.percentile(results[1][name], 50) * 1000,
                        "p99": np.percentile(results[1][name], 99) * 1000,
                        "throughput": 32 / np.median(results[32][name]),
                    }
                    for name in signatures
                }
            )

    base = next(iter(signatures))
    xla = ", XLA" if args.jit_compile else ""
    print(
        f"seq {args.seq_length}, padding: {args.padding}{xla}, schedule: {args.schedule}; "
        f"{cpu_summary()}, TF {tf.__version__}"
    )
    print(
        f"{args.rounds} rounds of {args.requests} batch-1 calls and {args.batches} batch-32 calls"
    )
    print()
    print(
        "| model | parameters | dev accuracy | vs base | batch-1 p50 (ms) | p99 (ms) "
        "| p50 vs base | batch-32 sentences/s | vs base |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, (_, parameters) in exported.items():

        def median(key: str, name: str = name) -> float:
            return float(np.median([round_[name][key] for round_ in rounds]))

        def ratio(key: str, name: str = name) -> float:
            return float(np.median([r[name][key] / r[base][key] for r in rounds]))

        print(
            f"| {name} | {parameters / 1e6:.1f}M | {scores[name]:.2%} "
            f"| {scores[name] / scores[base]:.1%} | {median('p50'):.2f} | {median('p99'):.2f} "
            f"| {ratio('p50'):.2f}x | {median('throughput'):.0f} | {ratio('throughput'):.2f}x |"
        )
    print()
    for name in signatures:
        per_round = ", ".join(f"{r[name]['p50'] / r[base]['p50']:.2f}" for r in rounds)
        print(f"{name}: batch-1 p50 / {base}'s per round: {per_round}")


if __name__ == "__main__":
    main()
