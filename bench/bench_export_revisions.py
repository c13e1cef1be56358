"""A classifier's export as two (or more) commits write it, side by side in one process: the
ONNX graph (`--format onnx`) or the SavedModel as TensorFlow Serving loads it
(`--format saved_model`, in `--precision` float32 or bfloat16).

For each `--revisions` commit, a temporary `git worktree` of it exports the same classifier
(`--classifier`, a `.keras` model; default: the installed MiniLM-L6 with a seeded 2-class head),
in a subprocess: the float32 graph of `keras_bert.export.onnx.task_graph`, or the SavedModel of
`export_for_serving` in `--precision`. The exports then take the dev sentences: ONNX Runtime
sessions (`OnnxModel`'s options: 2 intra-op threads) their ids, each batch cut to its longest
sentence; SavedModels (`pipelines.query_export.SessionModel`, TensorFlow's default threads) the
strings. Batch 1 over `--requests` sentences and batch 32 over `--batches` batches, the exports
alternating call by call (`scheduled_timings`). Prints the CPU, the largest difference of each
export's logits from the first's, batch-1 p50 and batch-32 sentences/s, and each export's
ratios to the first's.

    python -m bench.bench_export_revisions --revisions 3f6f41b HEAD [--classifier model.keras] \
        [--format onnx|saved_model] [--precision float32|bfloat16]

Run it in TF Serving's environment (`keras_bert.export.server_config.SERVER_ENVIRONMENT`) to
time SavedModels as the server runs them:

    TF_ENABLE_ONEDNN_OPTS=1 TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1 \\
        python -m bench.bench_export_revisions --revisions 3f6f41b HEAD --format saved_model \\
        --precision bfloat16
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime

from bench.bench_serving import SEQ_LENGTH, load_dev, request_batches, scheduled_timings
from keras_bert.cpu import cpu_summary
from keras_bert.data.batching import trim_padding
from keras_bert.serving.graph_runtimes import session_options
from keras_bert.text import BertPreprocessor
from pipelines.common import default_checkpoint
from pipelines.query_export import SessionModel

REPOSITORY = Path(__file__).resolve().parents[1]
# Run by each commit's own code: only what every commit of the writers has.
WRITE_EXPORT = """
import sys, keras, keras_bert
from pipelines.common import default_checkpoint
path, classifier, export_format, seq_length, precision = sys.argv[1:]
if classifier:
    model = keras.saving.load_model(classifier)
    preprocessor = model.preprocessor
else:
    encoder = keras_bert.load_encoder(default_checkpoint())
    keras.utils.set_random_seed(0)
    model = keras_bert.BertClassifier(encoder, 2)
    preprocessor = keras_bert.BertPreprocessor.from_checkpoint(
        default_checkpoint(), seq_length=int(seq_length)
    )
if export_format == "onnx":
    from keras_bert.export.onnx import task_graph
    from keras_bert.export.onnx.model_files import save_model
    save_model(task_graph(model), path)
else:
    from keras_bert.export import export_for_serving, serving_module
    module = serving_module(model, preprocessor, precision=precision)
    # A reduced precision's export checks its labels against float32's.
    reference = {}
    if precision != "float32":
        reference = {"float32_module": serving_module(model, preprocessor)}
    export_for_serving(module, path, "classifier", version=1, **reference)
"""
FORMATS = ("onnx", "saved_model")


def write_export(
    revision: str, classifier: str | None, export_format: str, precision: str, path: Path
) -> None:
    """Writes the classifier's export as `revision`'s code does, from a worktree of it."""
    with tempfile.TemporaryDirectory() as directory:
        worktree = Path(directory) / "tree"
        git = ["git", "-C", str(REPOSITORY)]
        subprocess.run([*git, "worktree", "add", "--detach", str(worktree), revision], check=True)
        try:
            subprocess.run(
                [sys.executable, "-c", WRITE_EXPORT, str(path), classifier or ""]
                + [export_format, str(SEQ_LENGTH), precision],
                cwd=worktree,
                env={**os.environ, "PYTHONPATH": str(worktree), "TF_CPP_MIN_LOG_LEVEL": "2"},
                check=True,
            )
        finally:
            subprocess.run([*git, "worktree", "remove", "--force", str(worktree)], check=True)


def onnx_calls(path: Path, inputs: list[dict]) -> list:
    session = onnxruntime.InferenceSession(
        str(path), session_options(), providers=["CPUExecutionProvider"]
    )
    return [lambda feeds=feeds: session.run(None, feeds)[0] for feeds in inputs]


def saved_model_calls(path: Path, inputs: list[list[str]]) -> list:
    model = SessionModel(str(path / "classifier" / "1"))
    return [lambda texts=texts: model.run({"text": texts})["logits"] for texts in inputs]


def ids_of(preprocessor: BertPreprocessor, texts: list[str]) -> dict[str, np.ndarray]:
    """The int32 inputs of `texts`, cut to the longest of them (`trim_padding`)."""
    packed, *_ = trim_padding(preprocessor(np.array(texts)))
    return {name: value.numpy().astype(np.int32) for name, value in packed.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--revisions", nargs="+", required=True, help="commits, the first the base")
    parser.add_argument("--classifier", help=".keras classifier (default: MiniLM-L6, new head)")
    parser.add_argument("--format", choices=FORMATS, default="onnx", help="what to export")
    parser.add_argument(
        "--precision", choices=("float32", "bfloat16"), default="float32", help="SavedModels'"
    )
    parser.add_argument("--requests", type=int, default=600, help="batch-1 calls per export")
    parser.add_argument("--batches", type=int, default=60, help="batch-32 calls per export")
    args = parser.parse_args()
    print(cpu_summary())
    texts, _ = load_dev()
    singles = [[texts[index % len(texts)]] for index in range(args.requests)]
    batches = request_batches(texts, 32, args.batches)
    if args.format == "onnx":
        preprocessor = BertPreprocessor.from_checkpoint(default_checkpoint(), seq_length=SEQ_LENGTH)
        singles, batches = (
            [ids_of(preprocessor, batch) for batch in inputs] for inputs in (singles, batches)
        )
    classifier = str(Path(args.classifier).resolve()) if args.classifier else None
    calls_of = onnx_calls if args.format == "onnx" else saved_model_calls
    calls = {}
    with tempfile.TemporaryDirectory() as directory:
        for revision in args.revisions:
            path = Path(directory) / revision
            write_export(revision, classifier, args.format, args.precision, path)
            calls[revision] = {1: calls_of(path, singles), 32: calls_of(path, batches)}
        base = args.revisions[0]
        logits = {revision: calls[revision][32][0]() for revision in calls}
        results = {
            batch_size: scheduled_timings(
                {revision: calls[revision][batch_size] for revision in calls}
            )
            for batch_size in (1, 32)
        }
    print(
        "\n| commit | largest logit difference from the first | batch-1 p50 (ms) "
        "| batch-32 sentences/s | p50 ratio | throughput ratio |\n|---|---:|---:|---:|---:|---:|"
    )
    p50 = {revision: 1000 * np.median(results[1][revision]) for revision in calls}
    rate = {revision: 32 / np.median(results[32][revision]) for revision in calls}
    for revision in calls:
        difference = float(np.abs(logits[revision] - logits[base]).max())
        print(
            f"| {revision} | {difference:.1e} | {p50[revision]:.2f} | {rate[revision]:.1f} "
            f"| {p50[revision] / p50[base]:.2f}× | {rate[revision] / rate[base]:.2f}× |"
        )


if __name__ == "__main__":
    main()
