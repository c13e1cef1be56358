"""Serving cost of in-graph text: the string signature vs the encoder alone on ids.

Exports the real MiniLM-L6 encoder (`EncoderServing`, seq 128) as a TF Serving version, loads
it back with `tf.saved_model.load` (the graph TF Serving runs) and times, on the same real
sentences of shared/data (movie-review snippets), in one process:

- `serving_default`: raw strings → tokenization + packing + encoder + pooling, in one graph;
- `serving_ids`: the same encoder fed precomputed `input_word_ids/input_mask/input_type_ids`.

Batch 1: latency p50/p99 over --requests calls (the two signatures alternate call by call, so
both see the same machine load). Batch 32: sentences/s over --batches batches. Prints a markdown
table.

    .venv/bin/python bench/bench_serving.py [--requests 300] [--batches 30]
"""

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import tensorflow as tf

from keras_bert import BertEncoder
from keras_bert.export import EncoderServing, export_for_serving
from keras_bert.text import BertPreprocessor
from pipelines.common import default_checkpoint

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = REPO_ROOT.parent / "shared" / "data"
SEQ_LENGTH = 128


def load_sentences() -> list[str]:
    path = DATA_DIR / "sentiment" / "movie_snippets.dev.jsonl"
    return [json.loads(line)["text"] for line in path.read_text().splitlines()]


def request_batches(sentences: list[str], batch_size: int, count: int) -> list[list[str]]:
    """`count` consecutive batches of `batch_size` sentences, wrapping around (full ones only)."""
    batches = [
        sentences[(index * batch_size) % len(sentences) :][:batch_size] for index in range(count)
    ]
    return [batch for batch in batches if len(batch) == batch_size]


def interleaved_timings(calls: dict[str, list], warmup: int = 5) -> dict[str, np.ndarray]:
    """Seconds of every call, `calls[name][index]` for each index in turn with the names
    alternating, so that all see the same machine load; after `warmup` calls of each."""
    for name in calls:
        for call in calls[name][:warmup]:
            call()
    timings = {name: [] for name in calls}
    for index in range(min(len(values) for values in calls.values())):
        for name in calls:
            start = time.perf_counter()
            calls[name][index]()
            timings[name].append(time.perf_counter() - start)
    return {name: np.array(values) for name, values in timings.items()}


def export_encoder(base_dir: Path) -> Path:
    preprocessor = BertPreprocessor.from_checkpoint(default_checkpoint(), seq_length=SEQ_LENGTH)
    encoder = BertEncoder.from_checkpoint(default_checkpoint())
    return export_for_serving(EncoderServing(encoder, preprocessor), base_dir, "minilm")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="batch-1 calls per signature")
    parser.add_argument("--batches", type=int, default=30, help="batch-32 calls per signature")
    args = parser.parse_args()

    sentences = load_sentences()
    with tempfile.TemporaryDirectory() as base_dir:
        export_dir = export_encoder(Path(base_dir))
        loaded = tf.saved_model.load(str(export_dir))
        preprocessor = BertPreprocessor.from_checkpoint(default_checkpoint(), seq_length=SEQ_LENGTH)
        serve_text = loaded.signatures["serving_default"]
        serve_ids = loaded.signatures["serving_ids"]

        def text_call(batch: list[str]):
            texts = tf.constant(batch)
            return lambda: serve_text(text=texts)

        def ids_call(batch: list[str]):
            inputs = preprocessor(tf.constant(batch))  # precomputed, outside the timing
            return lambda: serve_ids(**inputs)

        results = {}
        for batch_size, count in [(1, args.requests), (32, args.batches)]:
            batches = request_batches(sentences, batch_size, count)
            calls = {
                "string": [text_call(b) for b in batches],
                "ids": [ids_call(b) for b in batches],
            }
            results[batch_size] = interleaved_timings(calls)

    print(f"MiniLM-L6 (H384), seq {SEQ_LENGTH}, {os.cpu_count()} CPU cores, TF {tf.__version__}")
    print()
    print("| signature | batch-1 p50 (ms) | batch-1 p99 (ms) | batch-32 sentences/s |")
    print("|---|---|---|---|")
    for name, label in [
        ("ids", "`serving_ids` (encoder on ids)"),
        ("string", "`serving_default` (raw text)"),
    ]:
        latency = results[1][name] * 1000
        throughput = 32 / np.median(results[32][name])
        print(
            f"| {label} | {np.percentile(latency, 50):.2f} | {np.percentile(latency, 99):.2f} "
            f"| {throughput:.0f} |"
        )
    ratio = np.percentile(results[1]["string"], 50) / np.percentile(results[1]["ids"], 50)
    print()
    print(f"batch-1 p50 ratio string/ids: {ratio:.3f}")


if __name__ == "__main__":
    main()
