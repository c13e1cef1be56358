"""Training precision: the Keras dtype policies a run accepts, and "auto", which picks the one
this machine trains fastest in.

Whether bfloat16 pays depends on the processor, not on the model. On CPUs whose matmul units
take bfloat16 (Intel AMX, AMD Zen 4/5's AVX512-BF16) oneDNN runs bfloat16 matmuls faster than
float32, and `mixed_bfloat16` trains faster. On an Intel Xeon whose AMX is not exposed to the
guest (AVX512-BF16 only: one bfloat16 dot product per cycle, no more multiplies than float32's
two FMA ports), the same matmul and the training step are *slower* in bfloat16 (BENCHMARKS.md,
section Pretraining speed, has both CPUs). So "auto" asks the hardware: accelerators get their
native mixed precision, and a CPU times one matmul of a training step's shape in both types.
"""

from __future__ import annotations

import logging
import time

import tensorflow as tf

from keras_bert.errors import ConfigError

logger = logging.getLogger(__name__)

AUTO_PRECISION = "auto"
PRECISION_POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")

# bfloat16 is chosen on a CPU when its matmul is at least this much faster than float32's: a
# mixed step also pays for casts and float32 element-wise work that the matmul timing leaves
# out.
BFLOAT16_MIN_SPEEDUP = 1.15

# A feed-forward matmul of a BERT-mini training step (32 x 128 tokens, hidden 256 -> 1024): large
# enough for oneDNN's blocked kernels, short enough to time at the start of a run.
_TIMED_MATMUL = ((4096, 256), (256, 1024))


def check_precision(precision: str) -> None:
    """Raises a `ConfigError` unless `precision` is a Keras dtype policy the runs support, or
    "auto"."""
    if precision not in (*PRECISION_POLICIES, AUTO_PRECISION):
        choices = ", ".join((*PRECISION_POLICIES, AUTO_PRECISION))
        raise ConfigError(f"precision must be one of {choices}, got {precision!r}.")


def faster_cpu_policy(float32_seconds: float, bfloat16_seconds: float) -> str:
    """The policy a CPU trains faster in, from one matmul timed in float32 and in bfloat16.

    Example:
    >>> faster_cpu_policy(float32_seconds=9.4e-3, bfloat16_seconds=14.9e-3)
    'float32'
    >>> faster_cpu_policy(float32_seconds=9.4e-3, bfloat16_seconds=4.7e-3)
    'mixed_bfloat16'
    """
    if float32_seconds >= BFLOAT16_MIN_SPEEDUP * bfloat16_seconds:
        return "mixed_bfloat16"
    return "float32"


def cpu_matmul_seconds(dtype: tf.DType, repeats: int = 8) -> float:
    """The fastest of `repeats` timings of one step-shaped matmul on the CPU in `dtype`."""
    left_shape, right_shape = _TIMED_MATMUL
    with tf.device("/CPU:0"):
        left = tf.cast(tf.random.stateless_normal(left_shape, (0, 0)), dtype)
        right = tf.cast(tf.random.stateless_normal(right_shape, (0, 1)), dtype)
        matmul = tf.function(tf.linalg.matmul, autograph=False)
        matmul(left, right).numpy()  # traces and warms oneDNN's kernel cache
        timings = []
        for _ in range(repeats):
            start = time.perf_counter()
            matmul(left, right).numpy()
            timings.append(time.perf_counter() - start)
    return min(timings)


def _accelerator_policy(strategy: str) -> str | None:
    """Mixed precision native to the run's accelerator, or None on a CPU-only machine."""
    if strategy == "tpu" or tf.config.list_logical_devices("TPU"):
        return "mixed_bfloat16"
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return None
    capability = tf.config.experimental.get_device_details(gpus[0]).get("compute_capability")
    # bfloat16 tensor cores from Ampere (8.0) on; Volta and Turing have float16 ones.
    if capability and capability >= (8, 0):
        return "mixed_bfloat16"
    return "mixed_float16" if capability and capability >= (7, 0) else "float32"


def resolve_precision(precision: str, strategy: str = "default") -> str:
    """The Keras dtype policy a run trains in: `precision` itself, or for "auto" the fastest
    here (logged with the timings it rests on).

    Example:
    >>> resolve_precision("float32")
    'float32'
    >>> resolve_precision("auto") in PRECISION_POLICIES
    True
    """
    check_precision(precision)
    if precision != AUTO_PRECISION:
        return precision
    policy = _accelerator_policy(strategy)
    if policy is not None:
        logger.info("precision auto: %s on this accelerator.", policy)
        return policy
    float32_seconds = cpu_matmul_seconds(tf.float32)
    bfloat16_seconds = cpu_matmul_seconds(tf.bfloat16)
    policy = faster_cpu_policy(float32_seconds, bfloat16_seconds)
    logger.info(
        "precision auto: %s (a step-shaped matmul on this CPU takes %.2f ms in float32, "
        "%.2f ms in bfloat16).",
        policy,
        float32_seconds * 1e3,
        bfloat16_seconds * 1e3,
    )
    return policy
