"""The ONNX graph writer at two (or more) commits, side by side: a classifier's float32 graph as
each commit writes it, timed in one process on the same ids.

For each `--revisions` commit, a temporary `git worktree` of it writes the graph of the same
classifier (`--classifier`, a `.keras` model; default: the installed MiniLM-L6 with a seeded
2-class head) with `keras_bert.export.onnx.task_graph`, in a subprocess. The sessions (ONNX
Runtime, `OnnxModel`'s options: 2 intra-op threads) then take the dev sentences' ids, each batch
cut to its longest sentence: batch 1 over `--requests` sentences and batch 32 over `--batches`
batches, the graphs alternating call by call (`scheduled_timings`). Prints the CPU, the largest
difference of each graph's logits from the first's, batch-1 p50 and batch-32 sentences/s, and
each graph's ratios to the first's.

    python -m bench.bench_onnx_graphs --revisions 3f6f41b HEAD [--classifier model.keras]
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
from keras_bert.serving.onnx_model import session_options
from keras_bert.text import BertPreprocessor
from pipelines.common import default_checkpoint

REPOSITORY = Path(__file__).resolve().parents[1]
# Run by each commit's own code: only what every commit of the writer has.
WRITE_GRAPH = """
import sys, keras, keras_bert
from keras_bert.export.onnx import task_graph
from keras_bert.export.onnx.model_files import save_model
from pipelines.common import default_checkpoint
if sys.argv[2]:
    model = keras.saving.load_model(sys.argv[2])
else:
    encoder = keras_bert.load_encoder(default_checkpoint())
    keras.utils.set_random_seed(0)
    model = keras_bert.BertClassifier(encoder, 2)
save_model(task_graph(model), sys.argv[1])
"""


def write_graph(revision: str, classifier: str | None, path: Path) -> None:
    """Writes the classifier's graph as `revision`'s code does, from a worktree of it."""
    with tempfile.TemporaryDirectory() as directory:
        worktree = Path(directory) / "tree"
        git = ["git", "-C", str(REPOSITORY)]
        subprocess.run([*git, "worktree", "add", "--detach", str(worktree), revision], check=True)
        try:
            subprocess.run(
                [sys.executable, "-c", WRITE_GRAPH, str(path), classifier or ""],
                cwd=worktree,
                env={**os.environ, "PYTHONPATH": str(worktree), "TF_CPP_MIN_LOG_LEVEL": "2"},
                check=True,
            )
        finally:
            subprocess.run([*git, "worktree", "remove", "--force", str(worktree)], check=True)


def ids_of(preprocessor: BertPreprocessor, texts: list[str]) -> dict[str, np.ndarray]:
    """The int32 inputs of `texts`, cut to the longest of them (`trim_padding`)."""
    packed, *_ = trim_padding(preprocessor(np.array(texts)))
    return {name: value.numpy().astype(np.int32) for name, value in packed.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--revisions", nargs="+", required=True, help="commits, the first the base")
    parser.add_argument("--classifier", help=".keras classifier (default: MiniLM-L6, new head)")
    parser.add_argument("--requests", type=int, default=600, help="batch-1 calls per graph")
    parser.add_argument("--batches", type=int, default=60, help="batch-32 calls per graph")
    args = parser.parse_args()
    print(cpu_summary())
    texts, _ = load_dev()
    preprocessor = BertPreprocessor.from_checkpoint(default_checkpoint(), seq_length=SEQ_LENGTH)
    singles = [ids_of(preprocessor, [text]) for text in texts]
    singles = [singles[index % len(singles)] for index in range(args.requests)]
    batches = [ids_of(preprocessor, batch) for batch in request_batches(texts, 32, args.batches)]
    classifier = str(Path(args.classifier).resolve()) if args.classifier else None
    with tempfile.TemporaryDirectory() as directory:
        sessions = {}
        for revision in args.revisions:
            path = Path(directory) / f"{revision}.onnx"
            write_graph(revision, classifier, path)
            sessions[revision] = onnxruntime.InferenceSession(
                str(path), session_options(), providers=["CPUExecutionProvider"]
            )
    base = args.revisions[0]
    logits = {revision: session.run(None, batches[0])[0] for revision, session in sessions.items()}
    results = {}
    for batch_size, feeds in ((1, singles), (32, batches)):
        calls = {
            revision: [lambda s=session, f=feed: s.run(None, f) for feed in feeds]
            for revision, session in sessions.items()
        }
        results[batch_size] = scheduled_timings(calls)
    print(
        "\n| commit | largest logit difference from the first | batch-1 p50 (ms) "
        "| batch-32 sentences/s | p50 ratio | throughput ratio |\n|---|---:|---:|---:|---:|---:|"
    )
    p50 = {revision: 1000 * np.median(results[1][revision]) for revision in sessions}
    rate = {revision: 32 / np.median(results[32][revision]) for revision in sessions}
    for revision in sessions:
        difference = float(np.abs(logits[revision] - logits[base]).max())
        print(
            f"| {revision} | {difference:.1e} | {p50[revision]:.2f} | {rate[revision]:.1f} "
            f"| {p50[revision] / p50[base]:.2f}× | {rate[revision] / rate[base]:.2f}× |"
        )


if __name__ == "__main__":
    main()
