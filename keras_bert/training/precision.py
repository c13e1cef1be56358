"""Training precision: the Keras dtype policies a run accepts, and "auto", which picks the one
this machine trains fastest in.

Whether bfloat16 pays depends on the processor, not on the model. On CPUs whose matmul units
take bfloat16 (Intel AMX, AMD Zen 4/5's AVX512-BF16) oneDNN runs bfloat16 matmuls faster than
float32, and `mixed_bfloat16` trains faster. On a CPU with neither (AVX2 only, such as the AMD
EPYC of BENCHMARKS.md) bfloat16 is emulated and can only be slower. On an Intel Xeon whose AMX
is not exposed to the guest (AVX512-BF16 only: one bfloat16 dot product per cycle, no more
multiplies than float32's two FMA ports), the training step is *slower* in bfloat16 too
(BENCHMARKS.md, section Pretraining speed, has both Xeons). So "auto" asks the hardware:

- an accelerator gets its native mixed precision;
- a CPU without bfloat16 units (neither AVX512_BF16 nor AMX) trains in float32 at once;
- a CPU with them times a few train steps of one encoder block at the run's shape
  (`TrainStepShape`: batch, sequence length, the encoder's sizes) in float32 and in
  `mixed_bfloat16`, taking turns, and trains in bfloat16 only where its step is clearly faster.

A mixed step pays for casts, float32 LayerNorm and softmax and the optimizer's float32 update
beside its bfloat16 matmuls; timing the step, not one matmul, counts them. A single block
leaves out the embeddings' and the head's work, which both precisions do alike: the run's gain
is smaller than the block's, hence the margin `BFLOAT16_MIN_SPEEDUP`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
from collections.abc import Callable, Iterator

import keras
import numpy as np
import tensorflow as tf

from keras_bert.config import BertConfig
from keras_bert.cpu import has_bfloat16_units
from keras_bert.errors import ConfigError
from keras_bert.layers import TransformerEncoderBlock
from keras_bert.timing import interleaved_median_seconds
from keras_bert.training.callbacks import write_text_atomically
from keras_bert.training.optimization import create_optimizer
from keras_bert.training.strategy import RunWorkers, mean_over_workers

logger = logging.getLogger(__name__)

AUTO_PRECISION = "auto"
# The policy a run chose (`PrecisionChoice`), in each worker's directory: a resumed run keeps it.
PRECISION_FILE = "precision.json"
PRECISION_POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")

# bfloat16 is chosen on a CPU when an encoder block's train step is at least this much faster
# in it than in float32: the run's step adds work both precisions do alike (embeddings, the
# head, the optimizer's update of the word table, the input pipeline), which dilutes the gain.
BFLOAT16_MIN_SPEEDUP = 1.15
# Timed passes over the two precisions' steps, after one untimed pass (tracing, oneDNN's
# kernels); the median of each precision's steps decides.
TIMED_ROUNDS = 3


@dataclasses.dataclass(frozen=True)
class TrainStepShape:
    """The shape of a run's train step that `--precision auto` times on a CPU: `batch_size`
    sequences of `seq_length` tokens through one encoder block of the run's sizes.

    The defaults are MiniLM-L6's block (the jobs' default checkpoint) at the fine-tuning jobs'
    batch and sequence length.

    Args:
        batch_size: sequences per step (the global batch).
        seq_length: tokens per sequence.
        hidden_size, num_heads, intermediate_size, hidden_activation: the encoder's
            (`BertConfig`'s fields of those names).

    Example:
    >>> TrainStepShape.of(BertConfig.preset("mini"), batch_size=64, seq_length=128)
    TrainStepShape(batch_size=64, seq_length=128, hidden_size=256, num_heads=4, \
intermediate_size=1024, hidden_activation='gelu')
    """

    batch_size: int = 32
    seq_length: int = 128
    hidden_size: int = 384
    num_heads: int = 12
    intermediate_size: int = 1536
    hidden_activation: str = "gelu"

    @classmethod
    def of(cls, config: BertConfig, batch_size: int, seq_length: int) -> TrainStepShape:
        """The step of an encoder of `config` at `batch_size` x `seq_length`."""
        return cls(
            batch_size=batch_size,
            seq_length=seq_length,
            hidden_size=config.hidden_size,
            num_heads=config.num_heads,
            intermediate_size=config.intermediate_size,
            hidden_activation=config.hidden_activation,
        )


@dataclasses.dataclass(frozen=True)
class PrecisionChoice:
    """The dtype policy a run trains in, and what decided it (a run's summary records it).

    Args:
        policy: the Keras dtype policy the run trains in.
        requested: the run's `precision` setting: a policy, or "auto".
        reason: why `policy`, in a few words.
        float32_step_ms, bfloat16_step_ms: the median train step of one encoder block at the
            run's shape in float32 and in `mixed_bfloat16`, where "auto" timed them.

    Example:
    >>> print(PrecisionChoice("float32", "auto", "timed on this CPU", 210.0, 265.3).describe())
    precision auto: float32, timed on this CPU (an encoder block's train step: 210.0 ms in \
float32, 265.3 ms in mixed_bfloat16)
    """

    policy: str
    requested: str
    reason: str
    float32_step_ms: float | None = None
    bfloat16_step_ms: float | None = None

    def describe(self) -> str:
        """One line: the policy, why, and the timings it rests on."""
        line = f"precision {self.requested}: {self.policy}, {self.reason}"
        if self.float32_step_ms is None or self.bfloat16_step_ms is None:
            return line
        return (
            f"{line} (an encoder block's train step: {self.float32_step_ms:.1f} ms in float32, "
            f"{self.bfloat16_step_ms:.1f} ms in mixed_bfloat16)"
        )

    def to_dict(self) -> dict[str, str | float | None]:
        """Its fields, for a run's `metrics.json`."""
        return dataclasses.asdict(self)


def check_precision(precision: str) -> None:
    """Raises a `ConfigError` unless `precision` is a Keras dtype policy the runs support, or
    "auto"."""
    if precision not in (*PRECISION_POLICIES, AUTO_PRECISION):
        choices = ", ".join((*PRECISION_POLICIES, AUTO_PRECISION))
        raise ConfigError(f"precision must be one of {choices}, got {precision!r}.")


def faster_cpu_policy(float32_seconds: float, bfloat16_seconds: float) -> str:
    """The policy a CPU trains faster in, from a train step timed in float32 and in
    `mixed_bfloat16`: bfloat16 only when at least `BFLOAT16_MIN_SPEEDUP` times faster.

    Example:
    >>> faster_cpu_policy(float32_seconds=0.210, bfloat16_seconds=0.265)
    'float32'
    >>> faster_cpu_policy(float32_seconds=0.210, bfloat16_seconds=0.120)
    'mixed_bfloat16'
    """
    if float32_seconds >= BFLOAT16_MIN_SPEEDUP * bfloat16_seconds:
        return "mixed_bfloat16"
    return "float32"


def block_train_step(
    shape: TrainStepShape, policy: str, jit_compile: bool = False
) -> Callable[[], object]:
    """One `train_on_batch` of a model of one `TransformerEncoderBlock` of `shape` under
    `policy`, with the jobs' optimizer (AdamW, weight decay, global-norm clipping), as a call
    to time; its batch is made once.

    Example:
    >>> step = block_train_step(TrainStepShape(2, 8, 16, 2, 32), "mixed_bfloat16")
    >>> float(step()) > 0
    True
    """
    block = TransformerEncoderBlock(
        shape.hidden_size,
        shape.num_heads,
        shape.intermediate_size,
        hidden_activation=shape.hidden_activation,
        dtype=policy,
    )
    hidden_states = keras.Input((shape.seq_length, shape.hidden_size), shape.batch_size)
    padding_mask = keras.Input((shape.seq_length,), shape.batch_size, dtype="int32")
    model = keras.Model([hidden_states, padding_mask], block(hidden_states, padding_mask))
    model.compile(
        optimizer=create_optimizer(1e-4, total_steps=1000),
        loss="mean_squared_error",
        jit_compile=jit_compile,
    )
    batch_shape = (shape.batch_size, shape.seq_length, shape.hidden_size)
    inputs = (
        tf.constant(np.random.default_rng(0).standard_normal(batch_shape, np.float32)),
        tf.ones(batch_shape[:2], tf.int32),
    )
    targets = tf.zeros(batch_shape)
    return lambda: model.train_on_batch(inputs, targets)


def train_step_seconds(
    shape: TrainStepShape, rounds: int = TIMED_ROUNDS, jit_compile: bool = False
) -> dict[str, float]:
    """The median seconds of `block_train_step` in float32 and in `mixed_bfloat16`, the two
    taking turns step by step so that the machine's load hits both alike.

    A shape is timed once per process: the runs of one job that share a step shape (the tasks
    of `pipelines.glue`, a sweep's seeds) get its first timing, the same answer to the same
    question, instead of a few seconds of timing each.

    Example:
    >>> seconds = train_step_seconds(TrainStepShape(2, 8, 16, 2, 32), rounds=1)
    >>> sorted(seconds), all(value > 0 for value in seconds.values())
    (['float32', 'mixed_bfloat16'], True)
    >>> train_step_seconds(TrainStepShape(2, 8, 16, 2, 32), rounds=1) == seconds
    True
    """
    return dict(_timed_step_seconds(shape, rounds, jit_compile))


@functools.cache
def _timed_step_seconds(
    shape: TrainStepShape, rounds: int, jit_compile: bool
) -> tuple[tuple[str, float], ...]:
    steps = {
        policy: [block_train_step(shape, policy, jit_compile)]
        for policy in ("float32", "mixed_bfloat16")
    }
    return tuple(interleaved_median_seconds(steps, rounds).items())


def _accelerator_policy(strategy: tf.distribute.Strategy) -> str | None:
    """Mixed precision native to the run's accelerator, or None on a CPU-only machine."""
    if isinstance(strategy, tf.distribute.TPUStrategy) or tf.config.list_logical_devices("TPU"):
        return "mixed_bfloat16"
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return None
    capability = tf.config.experimental.get_device_details(gpus[0]).get("compute_capability")
    # bfloat16 tensor cores from Ampere (8.0) on; Volta and Turing have float16 ones.
    if capability and capability >= (8, 0):
        return "mixed_bfloat16"
    return "mixed_float16" if capability and capability >= (7, 0) else "float32"


def resolve_precision(
    precision: str,
    strategy: tf.distribute.Strategy | None = None,
    step_shape: TrainStepShape | None = None,
    jit_compile: bool = False,
) -> PrecisionChoice:
    """The Keras dtype policy a run trains in: `precision` itself, or for "auto" the fastest
    here (logged, with the timings it rests on).

    Args:
        precision: a policy of `PRECISION_POLICIES`, or "auto".
        strategy: the run's strategy (default: the current one). A TPU's means its native
            policy; under `MultiWorkerMirroredStrategy` the workers choose from their timings'
            means (`mean_over_workers`), so that all train in one policy.
        step_shape: the run's step, timed by "auto" on a CPU with bfloat16 units (default:
            `TrainStepShape()`).
        jit_compile: whether the run compiles its steps with XLA (the timed steps do too; XLA
            with mixed_bfloat16 on a CPU is slow, which gets a warning).

    Example:
    >>> resolve_precision("float32").policy
    'float32'
    >>> tiny_step = TrainStepShape(2, 8, 16, 2, 32)
    >>> resolve_precision("auto", step_shape=tiny_step).policy in PRECISION_POLICIES
    True
    """
    check_precision(precision)
    strategy = strategy or tf.distribute.get_strategy()
    accelerator_policy = _accelerator_policy(strategy)
    if precision != AUTO_PRECISION:
        choice = PrecisionChoice(precision, precision, "as set")
    else:
        choice = _auto_precision(accelerator_policy, strategy, step_shape, jit_compile)
        logger.info("%s", choice.describe())
    if jit_compile and accelerator_policy is None and choice.policy == "mixed_bfloat16":
        logger.warning(
            "jit_compile=True with mixed_bfloat16 on CPU: XLA does not use oneDNN's bfloat16 "
            "matmuls; without XLA, training is usually much faster (BENCHMARKS.md, section "
            "Pretraining speed)."
        )
    return choice


def _auto_precision(
    accelerator_policy: str | None,
    strategy: tf.distribute.Strategy,
    step_shape: TrainStepShape | None,
    jit_compile: bool,
) -> PrecisionChoice:
    """What "auto" chooses: the accelerator's policy, float32 on a CPU without bfloat16 units,
    else the faster of the two by the steps timed here (their means over the workers)."""
    if accelerator_policy is not None:
        return PrecisionChoice(accelerator_policy, AUTO_PRECISION, "native to this accelerator")
    if not has_bfloat16_units():
        reason = "this CPU has no bfloat16 units (neither AVX512_BF16 nor AMX)"
        return PrecisionChoice("float32", AUTO_PRECISION, reason)
    step_shape = step_shape or TrainStepShape()
    timed = train_step_seconds(step_shape, jit_compile=jit_compile)
    seconds = dict(zip(timed, mean_over_workers(strategy, list(timed.values())), strict=True))
    return PrecisionChoice(
        faster_cpu_policy(seconds["float32"], seconds["mixed_bfloat16"]),
        AUTO_PRECISION,
        f"timed on this CPU at batch {step_shape.batch_size} x {step_shape.seq_length} "
        f"tokens, hidden size {step_shape.hidden_size}",
        round(seconds["float32"] * 1e3, 2),
        round(seconds["mixed_bfloat16"] * 1e3, 2),
    )


def resolve_run_precision(
    precision: str, workers: RunWorkers, step_shape: TrainStepShape | None = None
) -> PrecisionChoice:
    """`resolve_precision` once per run: the choice is kept in `PRECISION_FILE`, and a run
    resumed with the same `precision` setting trains in the policy it started in (its step is
    not timed again, so a close timing cannot switch a resumed run's policy; under
    `MultiWorkerMirroredStrategy`, where every worker kept its record: `RunWorkers.kept`).

    Args:
        precision: the run's setting: a policy of `PRECISION_POLICIES`, or "auto".
        workers: the run's `RunWorkers` (its strategy, whether it compiles with XLA, the
            records kept).
        step_shape: the run's step, timed by "auto" on a CPU with bfloat16 units.

    Example:
    >>> import tempfile
    >>> from keras_bert.training.strategy import resolve_workers
    >>> workers = resolve_workers("default", None, tempfile.mkdtemp())
    >>> resolve_run_precision("mixed_bfloat16", workers).reason
    'as set'
    >>> resumed = resolve_workers("default", None, workers.worker_dir,
    ...                           records={PRECISION_FILE: {"requested": "mixed_bfloat16"}})
    >>> resolve_run_precision("mixed_bfloat16", resumed).reason
    'as this run chose when it started'
    """
    started = workers.kept.get(PRECISION_FILE)
    if started is not None:
        choice = PrecisionChoice(**{**started, "reason": "as this run chose when it started"})
        logger.info("%s", choice.describe())
        return choice
    choice = resolve_precision(precision, workers.strategy, step_shape, workers.jit_compile)
    write_text_atomically(workers.worker_dir / PRECISION_FILE, json.dumps(choice.to_dict()) + "\n")
    return choice


@contextlib.contextmanager
def run_precision(
    precision: str, workers: RunWorkers, step_shape: TrainStepShape | None = None
) -> Iterator[PrecisionChoice]:
    """The run's `PrecisionChoice` (`resolve_run_precision`), set as Keras' global dtype policy
    within, and the caller's policy set back after: the models the run builds within train in
    it, the caller's later ones in its own.

    Example:
    >>> import tempfile
    >>> from keras_bert.training.strategy import resolve_workers
    >>> with run_precision("mixed_bfloat16", resolve_workers("default", None, tempfile.mkdtemp())):
    ...     keras.layers.Dense(2).compute_dtype
    'bfloat16'
    >>> keras.mixed_precision.global_policy().name
    'float32'
    """
    choice = resolve_run_precision(precision, workers, step_shape)
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(choice.policy)
    try:
        yield choice
    finally:
        keras.mixed_precision.set_global_policy(previous)
