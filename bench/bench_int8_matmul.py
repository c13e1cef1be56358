"""Which int8 matmul is fast on this CPU: MiniLM-shaped matmuls in a reloaded SavedModel.

Times `[rows, 384] x [384, 1536]`, `[rows, 1536] x [1536, 384]` and `[rows, 384] x [384, 384]`
(the feed-forward and attention projections of MiniLM-L6), rows = tokens of a batch (20 and
64 at batch 1, 32 * 20 and 32 * 64 at batch 32), computed by:

- `float32`: `tf.matmul` (oneDNN's float32 kernel);
- `keras int8`: `keras.layers.Dense(...).quantize("int8")`: per-channel int8 weights, the
  inputs quantized per row at every call, `tf.linalg.matmul(int8, int8, output_type=int32)`;
- `int8 x int8 -> int32`: the same matmul, written out without Keras' custom gradient;
- `QDQ -> MatMul`: `QuantizeV2` of the inputs -> `Dequantize`, per-channel int8 weights ->
  `Dequantize`, then a float32 `MatMul`: the pattern TensorFlow's oneDNN graph rewrite fuses
  into one quantized matmul when it recognises it;
- `XLA int8 dot`: the int8 matmul in a `jit_compile=True` function.

Each is saved with `tf.saved_model.save` and loaded back with `tf.saved_model.load` (grappler
rewrites the graph there, as TF Serving's does), and the calls alternate so that contention
from other processes hits them alike. Prints p50 milliseconds per call.

    .venv/bin/python -m bench.bench_int8_matmul [--calls 200]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import keras
import numpy as np
import tensorflow as tf

SHAPES = ((384, 1536), (1536, 384), (384, 384))
ROWS = (20, 64, 640, 2048)


def _row_quantized(inputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    scale = 127.0 / tf.maximum(tf.reduce_max(tf.abs(inputs), axis=-1, keepdims=True), 1e-7)
    return tf.cast(tf.round(inputs * scale), tf.int8), scale


class Matmuls(tf.Module):
    """The mechanisms on one weight matrix `[in, out]`."""

    def __init__(self, kernel: np.ndarray):
        super().__init__()
        self.kernel = tf.constant(kernel)
        channel_max = np.maximum(np.abs(kernel).max(axis=0), 1e-7)
        self.channel_scale = tf.constant(127.0 / channel_max, tf.float32)
        self.int8_kernel = tf.constant(np.round(kernel * (127.0 / channel_max)), tf.int8)
        self.channel_min = tf.constant(-channel_max, tf.float32)
        self.channel_max = tf.constant(channel_max, tf.float32)
        dense = keras.layers.Dense(kernel.shape[1], use_bias=False)
        dense.build((None, kernel.shape[0]))
        dense.kernel.assign(kernel)
        dense.quantize("int8")
        self.dense = dense
        spec = [tf.TensorSpec([None, kernel.shape[0]], tf.float32, name="inputs")]
        self.float32 = tf.function(lambda x: tf.matmul(x, self.kernel), input_signature=spec)
        self.keras_int8 = tf.function(lambda x: self.dense(x), input_signature=spec)
        self.int8 = tf.function(self._int8, input_signature=spec)
        self.qdq = tf.function(self._qdq, input_signature=spec)
        self.xla_int8 = tf.function(self._int8, input_signature=spec, jit_compile=True)

    def _int8(self, inputs):
        quantized, scale = _row_quantized(inputs)
        product = tf.linalg.matmul(quantized, self.int8_kernel, output_type=tf.int32)
        return tf.cast(product, tf.float32) / (scale * self.channel_scale)

    def _qdq(self, inputs):
        minimum, maximum = tf.reduce_min(inputs), tf.reduce_max(inputs)
        quantized = tf.quantization.quantize(
            inputs, minimum, maximum, tf.qint8, mode="SCALED", round_mode="HALF_TO_EVEN"
        )
        activations = tf.quantization.dequantize(
            quantized.output, quantized.output_min, quantized.output_max, mode="SCALED"
        )
        weights = tf.quantization.dequantize(
            tf.bitcast(self.int8_kernel, tf.qint8),
            self.channel_min,
            self.channel_max,
            mode="SCALED",
            axis=1,
        )
        return tf.matmul(activations, weights)


MECHANISMS = {
    "float32": "float32",
    "keras int8": "keras_int8",
    "int8 x int8 -> int32": "int8",
    "QDQ -> MatMul": "qdq",
    "XLA int8 dot": "xla_int8",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="timed calls per mechanism")
    args = parser.parse_args()
    os.environ["TF_ONEDNN_ASSUME_FROZEN_WEIGHTS"] = "1"
    random = np.random.default_rng(0)
    print("| matmul | rows | " + " | ".join(MECHANISMS) + " | max rel. error int8 |")
    print("|---|---:|" + "---:|" * (len(MECHANISMS) + 1))
    for in_features, out_features in SHAPES:
        kernel = random.normal(0, 0.05, (in_features, out_features)).astype(np.float32)
        with tempfile.TemporaryDirectory() as directory:
            module = Matmuls(kernel)
            signatures = {name: getattr(module, name) for name in MECHANISMS.values()}
            tf.saved_model.save(module, directory, signatures=signatures)
            loaded = tf.saved_model.load(directory)
            for rows in ROWS:
                inputs = tf.constant(random.normal(0, 1, (rows, in_features)).astype(np.float32))
                calls = {name: loaded.signatures[function] for name, function in MECHANISMS.items()}
                outputs = {
                    name: next(iter(call(inputs=inputs).values())) for name, call in calls.items()
                }
                reference = outputs["float32"].numpy()
                error = max(
                    float(np.abs(value.numpy() - reference).max() / np.abs(reference).max())
                    for value in outputs.values()
                )
                for _ in range(5):
                    for call in calls.values():
                        call(inputs=inputs)
                timings = {name: [] for name in calls}
                for _ in range(args.calls):
                    for name, call in calls.items():
                        start = time.perf_counter()
                        call(inputs=inputs)
                        timings[name].append(time.perf_counter() - start)
                p50 = [f"{1000 * np.median(timings[name]):.3f}" for name in MECHANISMS]
                print(
                    f"| {in_features}x{out_features} | {rows} | "
                    + " | ".join(p50)
                    + f" | {error:.4f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
