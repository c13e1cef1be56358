"""`--precision auto`: the fastest precision on this machine among those that agree with float32.

Which precision serves fastest depends on the CPU (`keras_bert.cpu`): bfloat16 needs
AVX512_BF16 or AMX, int8 at least VNNI, and on a CPU with AVX2 and FMA only both are slower
than float32 (BENCHMARKS.md, section Serving). Rather than guess from the CPU's features,
`choose_precision` builds the serving module in each candidate precision, runs the agreement
check of the reduced ones (`check_precision`), times every candidate on batch-1 and batch-32
requests of the given sentences (the candidates take turns call by call, so that the machine's
load hits them alike) and picks the fastest that passed. Run it on the serving machine, or one
of its kind.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import tensorflow as tf

from keras_bert.errors import ConfigError
from keras_bert.export.precision import (
    PRECISIONS,
    Agreement,
    AgreementTolerance,
    PrecisionAgreementError,
    check_precision,
)
from keras_bert.export.signatures import DEFAULT_SIGNATURE
from keras_bert.timing import interleaved_median_seconds

# The batch sizes timed: one request alone, and a batch as TF Serving's batching forms it.
TIMED_BATCH_SIZES = (1, 32)


@dataclasses.dataclass(frozen=True)
class PrecisionTiming:
    """What `choose_precision` measured of one precision.

    Args:
        precision: "float32", "bfloat16" or "int8".
        batch1_ms: median milliseconds of a batch-1 request.
        batch32_ms: median milliseconds of a batch-32 request.
        agreement: the agreement check's result (None for float32, or where refused).
        refused: why the precision cannot serve this model (None if it can).
    """

    precision: str
    batch1_ms: float
    batch32_ms: float
    agreement: Agreement | None = None
    refused: str | None = None

    @property
    def ms_per_sentence(self) -> float:
        """The cost `choose_precision` ranks by: the mean of a sentence's milliseconds alone
        and in a batch of 32."""
        return (self.batch1_ms + self.batch32_ms / 32) / 2

    def describe(self) -> str:
        """One line: the timings, and the agreement or why refused."""
        line = (
            f"{self.precision:>8}: batch 1 {self.batch1_ms:.2f} ms, batch 32 "
            f"{32000 / self.batch32_ms:.1f} sentences/s, {self.ms_per_sentence:.2f} ms/sentence"
        )
        if self.refused:
            return f"{line}; refused: {self.refused}"
        if self.agreement:
            return (
                f"{line}; label agreement {self.agreement.label_agreement:.4f}, max probability "
                f"difference {self.agreement.max_probability_difference:.4f}"
            )
        return line


def _request_batches(requests: Sequence[Mapping[str, list]], size: int) -> list[dict]:
    """The rows of `requests` regrouped into full batches of `size` (cycled if too few)."""
    rows = [
        {name: values[index] for name, values in request.items()}
        for request in requests
        for index in range(len(next(iter(request.values()))))
    ]
    if not rows:
        raise ConfigError("choose_precision needs requests with at least one row to time.")
    count = max(1, len(rows) // size)
    cycled = (rows * (size // len(rows) + 1 + count))[: count * size]
    return [
        {name: tf.constant([row[name] for row in cycled[start : start + size]]) for name in rows[0]}
        for start in range(0, len(cycled), size)
    ]


def choose_precision(
    make_module,
    requests: Sequence[Mapping[str, list]],
    candidates: Sequence[str] = PRECISIONS,
    tolerance: AgreementTolerance | None = None,
    rounds: int = 3,
    batch1_requests: int = 16,
) -> tuple[str, list[PrecisionTiming]]:
    """The fastest of `candidates` that agrees with float32, and what was measured of each.

    Args:
        make_module: `make_module(precision=...)` → serving module (e.g. a `functools.partial` of
            `serving_module` with the model, preprocessor and options); a `ConfigError` it
            raises (an option the precision does not take) refuses that precision.
        requests: `serving_default` requests (dicts of lists of strings): the agreement
            check's inputs and the timed sentences.
        candidates: the precisions to try; float32 is always among them (the reference).
        tolerance: what the agreement check allows (default: each precision's).
        rounds: timed passes over the batches.
        batch1_requests: batch-1 requests per pass.

    Returns:
        The chosen precision and a `PrecisionTiming` per candidate, in `candidates`' order.

    Example:
    >>> import functools
    >>> from keras_bert import BertConfig, BertEncoder
    >>> from keras_bert.export import serving_module
    >>> from keras_bert.models import BertClassifier
    >>> from keras_bert.text import BertPreprocessor
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "film"]
    >>> preprocessor = BertPreprocessor(vocabulary, seq_length=8)
    >>> encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=len(vocabulary)))
    >>> make_module = functools.partial(
    ...     serving_module, BertClassifier(encoder, num_classes=2), preprocessor)
    >>> chosen, timings = choose_precision(
    ...     make_module, [{"text": ["good film", "film"]}], candidates=["float32"], rounds=1)
    >>> chosen, [timing.precision for timing in timings], timings[0].batch1_ms > 0
    ('float32', ['float32'], True)
    """
    unknown = [precision for precision in candidates if precision not in PRECISIONS]
    if unknown:
        raise ConfigError(f"Unknown precisions {unknown}; expected some of {PRECISIONS}.")
    order = ["float32", *(precision for precision in candidates if precision != "float32")]
    float32_module = make_module(precision="float32")
    modules, agreements, refusals = {"float32": float32_module}, {}, {}
    for precision in order[1:]:
        try:
            module = make_module(precision=precision)
            agreements[precision] = check_precision(module, float32_module, requests, tolerance)
        except (ConfigError, PrecisionAgreementError) as error:
            refusals[precision] = str(error)
            continue
        modules[precision] = module
    calls = {}
    for batch_size in TIMED_BATCH_SIZES:
        batches = _request_batches(requests, batch_size)
        if batch_size == 1:
            batches = batches[:batch1_requests]
        for precision, module in modules.items():
            signature = module.signatures()[DEFAULT_SIGNATURE]
            calls[(precision, batch_size)] = [
                lambda signature=signature, batch=batch: signature(**batch) for batch in batches
            ]
    seconds = {}
    for batch_size in TIMED_BATCH_SIZES:
        seconds |= interleaved_median_seconds(
            {key: value for key, value in calls.items() if key[1] == batch_size}, rounds
        )
    timings = [
        PrecisionTiming(
            precision,
            1000 * seconds.get((precision, 1), float("nan")),
            1000 * seconds.get((precision, 32), float("nan")),
            agreements.get(precision),
            refusals.get(precision),
        )
        for precision in order
    ]
    chosen = min(
        (timing for timing in timings if timing.refused is None),
        key=lambda timing: timing.ms_per_sentence,
    )
    return chosen.precision, timings
