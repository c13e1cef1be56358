"""Reduced-precision serving: the agreement check of a bfloat16 or int8 model (`serving_copy`)
against float32.

A bfloat16 export computes the encoder in bfloat16 (8 bits of mantissa): on CPUs with
AVX512_BF16 or AMX (and on GPUs) its matmuls run at up to twice float32's speed. An int8 export
multiplies the encoder's dense layers in int8 (per-channel weight scales, inputs quantized per
row), for CPUs whose int8 matmuls beat float32 (`--precision auto` measures it). Either moves
the answers a little. `export_for_serving` refuses such an export whose answers disagree with
the float32 model's beyond `AgreementTolerance` on the warm-up inputs (and on any inputs the
caller adds): the share of predicted labels that agree (classes, tags of real tokens, answer
start/end tokens, top mask fillers) and the largest difference of a probability.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np
import tensorflow as tf

from keras_bert.config import ConfigError
from keras_bert.decoding.answers import MASKED_LOGIT
from keras_bert.decoding.buckets import trim_to_bucket

PRECISIONS = ("float32", "bfloat16", "int8")
# Rows per batch of the agreement check.
_AGREEMENT_BATCH = 64
# Softmax over the sequence (QA start and end): these logits give padding probability 0.


class PrecisionAgreementError(ValueError):
    """A bfloat16 or int8 model's answers disagree with its float32 model's beyond the
    tolerance."""


@dataclasses.dataclass(frozen=True)
class AgreementTolerance:
    """How far a bfloat16 or int8 export may move from float32 (BENCHMARKS.md measures both).

    Args:
        min_label_agreement: the least share of predicted labels that must agree.
        max_probability_difference: the largest allowed |p_bfloat16 - p_float32| of any
            probability of any label.
    """

    min_label_agreement: float = 0.995
    max_probability_difference: float = 0.1


DEFAULT_TOLERANCE = AgreementTolerance()
# Each reduced precision's default. int8's per-row dynamic quantization moves probabilities
# further than bfloat16's rounding: the fine-tuned MiniLM sentiment classifier measured 99.13%
# label agreement and a largest probability difference of 0.226 in int8 (bfloat16: 99.81%,
# 0.015; BENCHMARKS.md, section Serving). 99% is the bar for int8 (issue 34).
TOLERANCES = {
    "bfloat16": DEFAULT_TOLERANCE,
    "int8": AgreementTolerance(min_label_agreement=0.99, max_probability_difference=0.25),
}


@dataclasses.dataclass(frozen=True)
class Agreement:
    """The measured agreement of two precisions: `labels` compared, share agreeing, max |dp|."""

    labels: int
    label_agreement: float
    max_probability_difference: float

    def within(self, tolerance: AgreementTolerance) -> bool:
        """Whether this agreement is inside `tolerance`."""
        return (
            self.label_agreement >= tolerance.min_label_agreement
            and self.max_probability_difference <= tolerance.max_probability_difference
        )


def _masked_softmax(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    logits = np.where(mask, logits, MASKED_LOGIT)
    exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)


def label_logits(outputs: Mapping[str, tf.Tensor], input_mask: tf.Tensor) -> list:
    """`(logits, real classes)` of each `serving_ids` output whose labels are its argmax, both
    `[rows, classes]`: classifier `logits` (every class), token classifier `logits` (a row per
    real token), question answering `start_logits` and `end_logits` (the real positions)."""
    mask = np.asarray(input_mask).astype(bool)
    pairs = []
    for name in ("logits", "start_logits", "end_logits"):
        if name not in outputs:
            continue
        logits = np.asarray(outputs[name], np.float64)
        if logits.ndim == 3:  # tokens: keep the real ones
            logits = logits[mask]
        pairs.append((logits, mask if name != "logits" else np.ones_like(logits, bool)))
    return pairs


def predictions(outputs: Mapping[str, tf.Tensor], input_mask: tf.Tensor) -> list:
    """`(labels, probabilities)` pairs of `serving_ids` outputs, one per predicted label.

    Classifier `logits` `[batch, classes]`: a class per row. Token classifier `logits`
    `[batch, sequence, tags]`: a tag per real token. Question answering `start_logits` and
    `end_logits` `[batch, sequence]`: a position per row (softmax over real tokens). Masked LM
    `top_ids`/`top_probabilities`: the top filler of each mask. An encoder has no labels.
    """
    pairs = []
    for logits, classes in label_logits(outputs, input_mask):
        probabilities = _masked_softmax(logits, classes)
        pairs.append((probabilities.argmax(-1), probabilities))
    if "top_ids" in outputs:
        ids = np.asarray(outputs["top_ids"])[..., 0]
        real = ids >= 0
        probabilities = np.asarray(outputs["top_probabilities"])[..., :1]
        pairs.append((ids[real], probabilities[real]))
    return pairs


def measure_agreement(candidate, reference, inputs: Iterable[Mapping[str, tf.Tensor]]) -> Agreement:
    """Compares two serving modules' `serving_ids` answers on batches of packed `inputs`.

    Raises:
        ConfigError: if the outputs hold no labels to compare (an encoder's embeddings).
    """
    labels, agreeing, difference = 0, 0, 0.0
    for batch in inputs:
        batch = dict(batch)
        pairs = zip(
            predictions(candidate.serve_ids(batch), batch["input_mask"]),
            predictions(reference.serve_ids(batch), batch["input_mask"]),
            strict=True,
        )
        for (candidate_labels, candidate_p), (reference_labels, reference_p) in pairs:
            labels += candidate_labels.size
            agreeing += int((candidate_labels == reference_labels).sum())
            if candidate_p.size:
                difference = max(difference, float(np.abs(candidate_p - reference_p).max()))
    if not labels:
        raise ConfigError(
            f"{type(reference).__name__} outputs hold no labels to compare across precisions; "
            "bfloat16 and int8 exports are checked on label agreement."
        )
    return Agreement(labels, agreeing / labels, difference)


def _packed_batches(module, requests: Sequence[Mapping[str, list]]) -> Iterator[dict]:
    """`serving_default` requests packed as the module packs them, cut to their buckets."""
    for request in requests:
        rows = len(next(iter(request.values())))
        for start in range(0, rows, _AGREEMENT_BATCH):
            texts = [
                tf.constant(values[start : start + _AGREEMENT_BATCH]) for values in request.values()
            ]
            yield trim_to_bucket(module.pack_texts(*texts), module.buckets)


def check_precision(
    module,
    float32_module,
    requests: Sequence[Mapping[str, list]],
    tolerance: AgreementTolerance | None = None,
) -> Agreement:
    """Compares a bfloat16 or int8 serving module with its float32 twin on `serving_default`
    requests.

    `tolerance` defaults to the module's precision's (`TOLERANCES`).

    Raises:
        PrecisionAgreementError: outside `tolerance`, with the measured agreement.
        ConfigError: without a float32 module to compare with.
    """
    if float32_module is None or float32_module.precision != "float32":
        raise ConfigError(
            f"A {module.precision} export needs its float32 serving module (float32_module=...) "
            f"for the agreement check, got {float32_module!r}."
        )
    tolerance = tolerance or TOLERANCES[module.precision]
    agreement = measure_agreement(module, float32_module, _packed_batches(module, requests))
    if not agreement.within(tolerance):
        raise PrecisionAgreementError(
            f"{module.precision} disagrees with float32 on {agreement.labels} labels: agreement "
            f"{agreement.label_agreement:.4f} (at least {tolerance.min_label_agreement} "
            f"needed), max probability difference {agreement.max_probability_difference:.4f} "
            f"(at most {tolerance.max_probability_difference} allowed). Export in float32."
        )
    return agreement
