"""Where a batch-1 request's milliseconds go: a ~20-token sentence through the string signature.

Exports the classifier (float32, default buckets) with `export_for_serving`, loads it back with
`tf.saved_model.load` and times, call by call in turn (so that contention hits every part alike):

- `serving_default` on the sentence: the whole request (tokenizer, packing, bucket, model, head,
  labels);
- `serving_ids` on its ids padded to `seq_length`: the request less tokenization and packing;
- the preprocessor alone (tokenize + pack), as a `tf.function`;
- the classifier on the ids cut to the default bucket, to its bucket of powers of two (the
  buckets before 2026-11-26), and to the sentence's own length (what padding costs), as
  `tf.function`s;
- the encoder alone on the bucket (what the head costs);
- an empty `tf.function` (what a call of a function costs, its dispatch);
- `serving_default` on 32 dev sentences (a batch's cost, for thread settings: run once per
  `--intra-op-threads`/`--inter-op-threads` pair, each in its own process).

    .venv/bin/python -m bench.bench_request_cost --classifier runs/sentiment/model.keras \\
        [--calls 300] [--intra-op-threads N --inter-op-threads N]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from bench.bench_serving import POWER_OF_TWO_BUCKETS, load_dev
from keras_bert.cpu import cpu_summary
from keras_bert.decoding.buckets import bucket_length
from keras_bert.export import export_for_serving, length_buckets, serving_module
from keras_bert.text import BertPreprocessor
from pipelines.common import default_checkpoint

SENTENCE = "A gripping, beautifully shot film whose quiet final act stays with you for days."
SEQ_LENGTH = 128


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--classifier", required=True, help=".keras classifier")
    parser.add_argument("--calls", type=int, default=300, help="timed calls of each part")
    parser.add_argument("--intra-op-threads", type=int, default=0, help="0: TensorFlow's")
    parser.add_argument("--inter-op-threads", type=int, default=0, help="0: TensorFlow's")
    args = parser.parse_args()
    os.environ["TF_ONEDNN_ASSUME_FROZEN_WEIGHTS"] = "1"
    tf.config.threading.set_intra_op_parallelism_threads(args.intra_op_threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.inter_op_threads)

    classifier = keras.saving.load_model(args.classifier)
    preprocessor = BertPreprocessor.from_checkpoint(default_checkpoint(), seq_length=SEQ_LENGTH)
    packed = preprocessor(tf.constant([SENTENCE]))
    length = int(packed["input_mask"].numpy().sum())
    bucket, power_of_two = (
        int(bucket_length(packed["input_mask"], buckets))
        for buckets in (length_buckets(SEQ_LENGTH), POWER_OF_TWO_BUCKETS)
    )
    ids, power_of_two_ids, own_length = (
        {name: value[:, :columns] for name, value in packed.items()}
        for columns in (bucket, power_of_two, length)
    )

    def run_model(inputs):
        return classifier(inputs, training=False)

    model = tf.function(run_model)
    encoder = tf.function(lambda inputs: classifier.encoder(inputs, training=False))
    pack = tf.function(lambda texts: preprocessor(texts))
    empty = tf.function(lambda texts: texts)
    with tempfile.TemporaryDirectory() as directory:
        export_dir = export_for_serving(
            serving_module(classifier, preprocessor), Path(directory), "request"
        )
        loaded = tf.saved_model.load(str(export_dir))
        text_signature = loaded.signatures["serving_default"]
        ids_signature = loaded.signatures["serving_ids"]
        text = tf.constant([SENTENCE])
        dev_batch = tf.constant(load_dev()[0][:32])
        parts = {
            "`serving_default`, the whole request": lambda: text_signature(text=text),
            f"`serving_ids`, ids padded to {SEQ_LENGTH}": lambda: ids_signature(**packed),
            "tokenize + pack (`tf.function`)": lambda: pack(text),
            f"classifier on the bucket ({bucket} ids)": lambda: model(ids),
            f"classifier on {power_of_two} ids": lambda: model(power_of_two_ids),
            f"classifier on the sentence's {length} ids": lambda: model(own_length),
            f"encoder on the bucket ({bucket} ids)": lambda: encoder(ids),
            "an empty `tf.function` (dispatch)": lambda: empty(text),
            "`serving_default` on 32 dev sentences": lambda: text_signature(text=dev_batch),
        }
        for part in parts.values():
            for _ in range(10):
                part()
        timings = {name: [] for name in parts}
        for _ in range(args.calls):
            for name, part in parts.items():
                start = time.perf_counter()
                part()
                timings[name].append(time.perf_counter() - start)
    print(
        f"{cpu_summary()}, TF {tf.__version__}, threads intra-op "
        f"{args.intra_op_threads or 'default'}, inter-op {args.inter_op_threads or 'default'}; "
        f"sentence of {length} tokens, {args.calls} calls each, interleaved\n"
    )
    print("| part | p50 (ms) | p90 (ms) |")
    print("|---|---:|---:|")
    for name, values in timings.items():
        milliseconds = 1000 * np.array(values)
        print(
            f"| {name} | {np.percentile(milliseconds, 50):.2f} "
            f"| {np.percentile(milliseconds, 90):.2f} |"
        )


if __name__ == "__main__":
    main()
