"""Fine-tuning throughput: keras_bert vs keras-hub on the real MiniLM checkpoint, same run.

Trains a sequence classifier (MiniLM-L6-H384, seq 64, batch 32, AdamW) on real movie-review
batches and reports the median seconds per step after warm-up, as sequences per second.
`--dtype-policy mixed_bfloat16` trains every variant in bfloat16 (the Keras global policy),
for CPUs with bfloat16 units (AMX, AVX512_BF16); run it beside a float32 run on one machine.

    python -m bench.bench_finetuning [--steps 12] [--variants ours,ours_xla,keras_hub,keras_hub_xla]
        [--dtype-policy mixed_bfloat16]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import keras
import numpy as np

from keras_bert.data.classification import (
    classification_dataset,
    encode_labels,
    read_classification_file,
)
from keras_bert.models import BertClassifier, BertEncoder
from keras_bert.text import BertPreprocessor
from keras_bert.training import create_optimizer
from pipelines.common import default_checkpoint

DATA = "../shared/data/sentiment/movie_snippets.train.jsonl"


def real_batch(seq_length: int, batch_size: int):
    examples = read_classification_file(DATA).sample(batch_size, seed=1)
    preprocessor = BertPreprocessor.from_checkpoint(default_checkpoint(), seq_length=seq_length)
    labels = encode_labels(examples.labels, ["neg", "pos"])
    dataset = classification_dataset(
        examples, preprocessor, labels, batch_size, dynamic_padding=False
    )
    inputs, labels = next(iter(dataset))
    return {name: np.asarray(value) for name, value in inputs.items()}, np.asarray(labels)


def ours(jit_compile: bool):
    encoder = BertEncoder.from_checkpoint(default_checkpoint())
    model = BertClassifier(encoder, num_classes=2)
    model.compile(optimizer=create_optimizer(5e-5, total_steps=1000), jit_compile=jit_compile)
    return model, lambda inputs: inputs


def keras_hub_peer(jit_compile: bool):
    import keras_hub

    backbone = keras_hub.models.BertBackbone.from_preset(default_checkpoint())
    model = keras_hub.models.BertTextClassifier(backbone=backbone, num_classes=2, preprocessor=None)
    model.compile(
        optimizer=keras.optimizers.AdamW(5e-5),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=jit_compile,
    )

    def adapt(inputs):
        return {
            "token_ids": inputs["input_word_ids"],
            "padding_mask": inputs["input_mask"],
            "segment_ids": inputs["input_type_ids"],
        }

    return model, adapt


VARIANTS = {
    "ours": lambda: ours(jit_compile=False),
    "ours_xla": lambda: ours(jit_compile=True),
    "keras_hub": lambda: keras_hub_peer(jit_compile=False),
    "keras_hub_xla": lambda: keras_hub_peer(jit_compile=True),
}


def time_steps(model, inputs, labels, steps: int, warmup: int = 2) -> list[float]:
    durations = []
    for step in range(warmup + steps):
        started = time.perf_counter()
        model.train_on_batch(inputs, labels)
        if step >= warmup:
            durations.append(time.perf_counter() - started)
    return durations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--seq-length", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--variants", default="ours,keras_hub,ours_xla,keras_hub_xla")
    parser.add_argument("--dtype-policy", default="float32", help="e.g. mixed_bfloat16")
    args = parser.parse_args()

    keras.mixed_precision.set_global_policy(args.dtype_policy)
    inputs, labels = real_batch(args.seq_length, args.batch_size)
    results = {}
    for name in args.variants.split(","):
        model, adapt = VARIANTS[name]()
        durations = time_steps(model, adapt(inputs), labels, args.steps)
        median = statistics.median(durations)
        results[name] = {
            "median_step_seconds": round(median, 3),
            "sequences_per_second": round(args.batch_size / median, 2),
        }
        print(name, results[name], flush=True)
    print(json.dumps({"config": vars(args), "results": results}, indent=2))


if __name__ == "__main__":
    main()
