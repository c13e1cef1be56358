"""Choosing a `tf.distribute` strategy from one flag."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

import tensorflow as tf

from keras_bert.errors import ConfigError

STRATEGY_NAMES = ("default", "mirrored", "multi_worker_mirrored", "tpu")

logger = logging.getLogger(__name__)


def resolve_strategy(name: str = "default", tpu: str | None = None) -> tf.distribute.Strategy:
    """The distribution strategy named by a flag.

    Args:
        name: "default" (one device), "mirrored" (all local GPUs, or the CPU),
            "multi_worker_mirrored" (workers described by the `TF_CONFIG` environment variable),
            or "tpu".
        tpu: the TPU address or name for "tpu" (empty: the local or environment-configured TPU).

    Example:
    >>> resolve_strategy("default").num_replicas_in_sync
    1
    """
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multi_worker_mirrored":
        if "TF_CONFIG" not in os.environ:
            logger.warning("TF_CONFIG is not set: MultiWorkerMirroredStrategy runs one worker.")
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or "")
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    raise ConfigError(f"Unknown strategy {name!r}; expected one of {', '.join(STRATEGY_NAMES)}.")


def mean_over_workers(strategy: tf.distribute.Strategy, values: Sequence[float]) -> list[float]:
    """`values` averaged over the workers of a `MultiWorkerMirroredStrategy` (one collective
    all-reduce), or as they are under any other strategy: a choice every worker makes from
    the means is the same on each.

    Example:
    >>> mean_over_workers(tf.distribute.get_strategy(), [1.5, 2.0])
    [1.5, 2.0]
    """
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return list(values)
    local = tf.constant(values, tf.float32)

    @tf.function
    def mean() -> tf.Tensor:
        # Every replica of a worker holds its worker's values, and workers have as many
        # replicas each: the mean over replicas is the mean over workers.
        per_replica = strategy.run(lambda: tf.identity(local))
        return strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica, axis=None)

    return mean().numpy().tolist()


def on_every_worker(strategy: tf.distribute.Strategy, holds: bool) -> bool:
    """Whether `holds` is true on every worker of a `MultiWorkerMirroredStrategy` (one
    all-reduce, which every worker must make), or `holds` itself under any other strategy: how
    workers agree to keep what each recorded only where all of them recorded it.

    Example:
    >>> on_every_worker(tf.distribute.get_strategy(), True)
    True
    """
    return mean_over_workers(strategy, [float(holds)]) == [1.0]


def jit_compile_supported(
    strategy: tf.distribute.Strategy, requested: bool, precision: str = "float32"
) -> bool:
    """Whether to pass `jit_compile=True` to `model.compile` under this strategy.

    With Keras 3.15, XLA under a mirrored strategy on CPU fails at the first step (a replica's
    variable is placed on the wrong device), so there we fall back to plain graphs with a
    warning. TPUs always compile with XLA. On CPU, XLA with bfloat16 works but is slow (its
    matmuls skip oneDNN's AMX kernels), which gets a warning too.
    """
    if not requested:
        return False
    on_cpu = not tf.config.list_logical_devices("GPU") and not tf.config.list_logical_devices("TPU")
    mirrored = isinstance(
        strategy, tf.distribute.MirroredStrategy | tf.distribute.MultiWorkerMirroredStrategy
    )
    if mirrored and on_cpu:
        logger.warning(
            "jit_compile=True is not supported under %s on CPU with Keras 3; training without XLA.",
            type(strategy).__name__,
        )
        return False
    if on_cpu and precision == "mixed_bfloat16":
        logger.warning(
            "jit_compile=True with mixed_bfloat16 on CPU: XLA does not use oneDNN's bfloat16 "
            "matmuls; without XLA, training is usually much faster (BENCHMARKS.md, section "
            "Pretraining speed)."
        )
    return True
