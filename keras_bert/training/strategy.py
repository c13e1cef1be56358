"""Where a run trains: its `tf.distribute` strategy, chosen by one flag, and what the run asks of
it, answered once as it starts (`RunWorkers`): this worker's output directory, whether it is
the chief, whether XLA compiles its steps, and what its workers agree on (the means of their
timings, and which records of the run's start every one of them kept)."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

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


def jit_compile_supported(strategy: tf.distribute.Strategy, requested: bool) -> bool:
    """Whether to pass `jit_compile=True` to `model.compile` under this strategy.

    With Keras 3.15, XLA under a mirrored strategy on CPU fails at the first step (a replica's
    variable is placed on the wrong device), so there we fall back to plain graphs with a
    warning. TPUs always compile with XLA.

    Example:
    >>> jit_compile_supported(tf.distribute.get_strategy(), requested=True)
    True
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
    return True


def worker_output_dir(output_dir: Path, strategy: tf.distribute.Strategy) -> Path:
    """The chief writes to `output_dir`; other workers to their own sub-folders (Keras writes
    files from every worker, and two writers of one file would clash).

    Example:
    >>> str(worker_output_dir(Path("runs/sst2"), tf.distribute.get_strategy()))
    'runs/sst2'
    """
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or resolver.task_type in (None, "chief") or not resolver.cluster_spec():
        return output_dir
    if (
        resolver.task_type == "worker"
        and resolver.task_id == 0
        and ("chief" not in resolver.cluster_spec().as_dict())
    ):
        return output_dir
    return output_dir / "workers" / f"{resolver.task_type}_{resolver.task_id}"


@dataclasses.dataclass(frozen=True)
class RunWorkers:
    """A run's strategy and the answers the run needs of it, found once as the run starts.

    Args:
        strategy: the run's `tf.distribute` strategy.
        worker_dir: this worker's output directory (`worker_output_dir`).
        is_chief: whether this worker writes the run's outputs (its `worker_dir` is the run's).
        jit_compile: whether train steps compile with XLA: asked for, and supported here.
        kept: the records of the run's start (JSON files of `worker_dir`, by name) that every
            worker kept: a resumed run reads its choices there instead of making them anew.

    Example:
    >>> import tempfile
    >>> workers = resolve_workers("default", None, Path(tempfile.mkdtemp()), jit_compile=True)
    >>> workers.is_chief, workers.jit_compile, workers.multi_worker, workers.mean([1.5])
    (True, True, False, [1.5])
    >>> _ = (workers.worker_dir / "plan.json").write_text('{"total_steps": 8}')
    >>> resumed = resolve_workers("default", None, workers.worker_dir, records={"plan.json": {}})
    >>> resumed.kept
    {'plan.json': {'total_steps': 8}}
    """

    strategy: tf.distribute.Strategy
    worker_dir: Path
    is_chief: bool = True
    jit_compile: bool = False
    kept: Mapping[str, dict] = dataclasses.field(default_factory=dict)

    @property
    def multi_worker(self) -> bool:
        return isinstance(self.strategy, tf.distribute.MultiWorkerMirroredStrategy)

    def mean(self, values: Sequence[float]) -> list[float]:
        """`values` averaged over the workers (`mean_over_workers`): every worker must ask."""
        return mean_over_workers(self.strategy, values)


def _kept_records(
    worker_dir: Path, records: Mapping[str, Mapping[str, Any]], strategy: tf.distribute.Strategy
) -> dict[str, dict]:
    """The records named in `records` that this worker holds with the items given there, and
    that every worker holds so (one all-reduce for all of them)."""
    if not records:
        return {}
    held = {}
    for name, expected in records.items():
        path = worker_dir / name
        record = json.loads(path.read_text("utf-8")) if path.is_file() else None
        if record is not None and all(record.get(key) == value for key, value in expected.items()):
            held[name] = record
    # A run stopped while its workers wrote their records resumes with some of them only:
    # then every worker makes that choice anew (and meets the others in its all-reduce).
    shares = mean_over_workers(strategy, [float(name in held) for name in records])
    return {name: held[name] for name, share in zip(records, shares, strict=True) if share == 1.0}


def resolve_workers(
    strategy: str,
    tpu: str | None,
    output_dir: str | os.PathLike,
    jit_compile: bool = False,
    records: Mapping[str, Mapping[str, Any]] | None = None,
) -> RunWorkers:
    """The run's `RunWorkers`: the strategy of `strategy` and `tpu` (`resolve_strategy`), this
    worker's directory under `output_dir` (made here), whether XLA compiles the steps where
    `jit_compile` asks for it (`jit_compile_supported`), and which of `records` every worker
    kept.

    Args:
        strategy, tpu: see `resolve_strategy`.
        output_dir: the run's output directory.
        jit_compile: whether the run asks for XLA.
        records: the records a resumed run keeps, by file name, each with the items a record
            must hold to be kept (e.g. the setting it was chosen under).
    """
    resolved = resolve_strategy(strategy, tpu)
    output_dir = Path(output_dir)
    worker_dir = worker_output_dir(output_dir, resolved)
    worker_dir.mkdir(parents=True, exist_ok=True)
    return RunWorkers(
        resolved,
        worker_dir,
        is_chief=worker_dir == output_dir,
        jit_compile=jit_compile_supported(resolved, jit_compile),
        kept=_kept_records(worker_dir, records or {}, resolved),
    )
