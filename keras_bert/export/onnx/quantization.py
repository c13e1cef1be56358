"""int8 ONNX exports: ONNX Runtime's quantization of the fused graph, dynamic or static, with the
nodes that move the answers most left in float32, chosen on one part of the checked inputs and
accepted on the other.

Two ways to quantize (`INT8_MODES`), both with int8 weights and a scale per output channel
(per-channel scales keep the labels better than one per tensor, the peer's default
`quantize_dynamic`); `reduce_range` (7-bit weights) only on a CPU without VNNI, where the 8-bit
products of the older instructions can saturate:

- "dynamic" (`quantize_dynamic`): the weights of every `MatMul` and `Attention` node; each
  activation quantized per call, with one scale per tensor computed from its values.
- "static" (`quantize_static`, QDQ format): the weights of every `MatMul` node, and its
  activation input with a fixed scale calibrated (MinMax) on the search inputs, so no range is
  computed at run time. ONNX Runtime's `Attention` has no static form, so the graph is written
  with the attention's input projection as a `MatMul` (`task_graph(fused_attention=False)`).

The int8 model must stay close to float32: at least `MIN_LABEL_AGREEMENT` of its labels agree,
and the scores the labels are read from (logits, mask fillers' probabilities) differ from
float32's by at most `MAX_RELATIVE_ERROR` of their size (`relative_error`). Labels alone flatter
int8 on inputs the model was trained on: a label flips only near a tie, and such inputs hold few
ties. On the fine-tuned MiniLM sentiment classifier, 8 of 1,053 training sentences (every 8th) lie
within 0.2 of a tie in logit margin against 20 of the 1,033 held-out dev sentences; all-int8
agreed on 99.15% of the training slice but on 97.77% of dev. The relative error depends far less
on the ties (all-int8: 6.2% on either of two training slices, 8.0% on dev; with the nine most
sensitive nodes in float32: 1.4% and 1.8%), so a bound on it carries over to inputs that were
not checked.

The checked inputs come in two parts. On the search part (and the static calibration), if the
all-int8 model misses either bound, `quantize_int8` measures each node's sensitivity (the
relative error when only that node is int8: one quantization and one pass per node) and leaves
nodes in float32 from the most sensitive down, one more at a time, until the model meets both.
The model it chose must then keep `MIN_LABEL_AGREEMENT` of the labels of the held-out part,
which chose nothing (its relative error is reported, not bounded: a bound met on the search
part is expected to be exceeded a little on new inputs, by design, see `MAX_RELATIVE_ERROR`):
the figures `Int8Agreement` reports (and `keras_bert.json` records) are the held-out ones.
Activation rounding, not weight rounding, makes most of the error, and an early block's error
grows through every later block: on MiniLM the first blocks' feed-forward matmuls and attention
weights lead the order, the last blocks' and the head's come last.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx

from keras_bert.cpu import cpu_features
from keras_bert.errors import ConfigError
from keras_bert.export.onnx.encoder_graph import FIRST_QUERY_PREFIX, RELATIVE_TERM_PREFIX
from keras_bert.export.onnx.model_files import (
    inference_session,
    needs_external_data,
    save_model,
)
from keras_bert.export.onnx.rotary_attention import ROTARY_ATTENTION_PREFIX
from keras_bert.export.precision import PrecisionAgreementError, label_logits, predictions

# The bar (and the SavedModel int8 check's, `keras_bert.export.precision`).
MIN_LABEL_AGREEMENT = 0.99
# A label flips where the error outgrows float32's margin: with margins spread evenly and
# Gaussian errors, a relative error e flips about 0.23 e of the labels. On MiniLM's held-out dev
# sentences the error was 1.3 times the checked training slice's, so 1.5% on the checked inputs
# comes to about 0.45% of new labels: inside the 1% bar, and at most half a point of accuracy.
MAX_RELATIVE_ERROR = 0.015
INT8_MODES = ("dynamic", "static")
# The nodes each mode quantizes.
QUANTIZED_OPS = {"dynamic": ("MatMul", "Attention"), "static": ("MatMul",)}


@dataclasses.dataclass(frozen=True)
class Int8Agreement:
    """What `quantize_int8` chose and measured.

    Args:
        mode: "dynamic" or "static" (`INT8_MODES`).
        labels: held-out labels compared with float32's.
        label_agreement: the share of them that agree.
        max_probability_difference: the largest |p_int8 - p_float32| of a held-out label.
        relative_error: the held-out label scores' error relative to their size
            (`relative_error`).
        search_labels: the labels the nodes were ranked and chosen on (and, static, calibrated).
        search_label_agreement: the share of them that agree.
        search_relative_error: their relative error.
        per_channel: a weight scale per output channel.
        reduce_range: 7-bit weights (a CPU without VNNI).
        int8_nodes: how many quantizable nodes (`QUANTIZED_OPS`) are int8.
        float32_nodes: the names of those left in float32.
        sensitivity: each node's relative error when only it is int8 (measured only when the
            all-int8 model is too far from float32).
        tried: (label agreement, relative error) on the search part of each model tried before,
            in order: all int8, then the most sensitive node in float32, then the two most, ...
    """

    mode: str
    labels: int
    label_agreement: float
    max_probability_difference: float
    relative_error: float
    search_labels: int
    search_label_agreement: float
    search_relative_error: float
    per_channel: bool
    reduce_range: bool
    int8_nodes: int
    float32_nodes: list[str]
    sensitivity: dict[str, float]
    tried: list[tuple[float, float]]


def has_vnni() -> bool:
    """Whether this CPU has int8 dot-product instructions (AVX512_VNNI, AVX-VNNI or AMX)."""
    features = cpu_features()
    return features["avx512_vnni"] or features["avx_vnni"] or features["amx_int8"]


def quantizable_nodes(model: onnx.ModelProto, mode: str = "dynamic") -> list[str]:
    """The nodes `quantize_int8` may quantize in `mode`, in graph order (not
    `always_float32_nodes`)."""
    always_float32 = set(always_float32_nodes(model))
    return [
        node.name
        for node in model.graph.node
        if node.op_type in QUANTIZED_OPS[mode] and node.name not in always_float32
    ]


def always_float32_nodes(model: onnx.ModelProto) -> list[str]:
    """The matmuls int8 leaves in float32: DeBERTa's relative-position ones, a classifier's
    one-query attention products and ModernBERT's attention products (of two activations, no
    weights)."""
    prefixes = (RELATIVE_TERM_PREFIX, FIRST_QUERY_PREFIX, ROTARY_ATTENTION_PREFIX)
    return [
        node.name for node in model.graph.node if any(prefix in node.name for prefix in prefixes)
    ]


def session_outputs(session, batches: Sequence[dict]) -> list[dict]:
    """Every output of `session` (ONNX Runtime's or `OpenVinoSession`) on each batch, by name."""
    names = [output.name for output in session.get_outputs()]
    inputs = [graph_input.name for graph_input in session.get_inputs()]
    return [
        dict(zip(names, session.run(names, {name: batch[name] for name in inputs}), strict=True))
        for batch in batches
    ]


def label_agreement(candidate: list[dict], reference: list[dict], batches: Sequence[dict]):
    """(labels, share agreeing, max probability difference) of two models' outputs."""
    labels, agreeing, difference = 0, 0, 0.0
    for ours, theirs, batch in zip(candidate, reference, batches, strict=True):
        pairs = zip(
            predictions(ours, batch["input_mask"]),
            predictions(theirs, batch["input_mask"]),
            strict=True,
        )
        for (our_labels, our_p), (their_labels, their_p) in pairs:
            labels += our_labels.size
            agreeing += int((our_labels == their_labels).sum())
            if our_p.size:
                difference = max(difference, float(np.abs(our_p - their_p).max()))
    if not labels:
        raise ConfigError(
            "Reduced-precision exports are checked on labels; this model's outputs hold none."
        )
    return labels, agreeing / labels, difference


def label_scores(outputs: dict, input_mask: np.ndarray) -> list[np.ndarray]:
    """The scores each output's labels are read from, `[rows, classes]`: logits (of the real
    tokens for a token classifier; answer logits at real positions, 0 elsewhere) less their
    mean over the classes (softmax ignores it; a regressor's one score is kept as is), or the
    mask fillers' probabilities.

    Example:
    >>> label_scores({"logits": np.array([[3.0, 1.0]])}, np.ones((1, 4)))
    [array([[ 1., -1.]])]
    """
    scores = []
    for logits, classes in label_logits(outputs, input_mask):
        if logits.shape[-1] > 1:
            mean = (logits * classes).sum(-1, keepdims=True) / np.maximum(
                classes.sum(-1, keepdims=True), 1
            )
            logits = np.where(classes, logits - mean, 0.0)
        scores.append(logits)
    if "top_probabilities" in outputs:
        scores.append(np.asarray(outputs["top_probabilities"], np.float64))
    return scores


def relative_error(candidate: list[dict], reference: list[dict], batches: Sequence[dict]) -> float:
    """||scores - reference scores|| / ||reference scores|| over every `label_scores`."""
    error, size = 0.0, 0.0
    for ours, theirs, batch in zip(candidate, reference, batches, strict=True):
        pairs = zip(
            label_scores(ours, batch["input_mask"]),
            label_scores(theirs, batch["input_mask"]),
            strict=True,
        )
        for our_scores, their_scores in pairs:
            error += float(np.square(our_scores - their_scores).sum())
            size += float(np.square(their_scores).sum())
    return (error / size) ** 0.5 if size else 0.0


@dataclasses.dataclass(frozen=True)
class AgreementMeasure:
    """A reduced-precision model's outputs against float32's on some batches: labels, the
    share that agree, the largest probability difference and the relative error."""

    labels: int
    agreement: float
    difference: float
    error: float

    @classmethod
    def of(
        cls, outputs: list[dict], reference: list[dict], batches: Sequence[dict]
    ) -> AgreementMeasure:
        labels, agreement, difference = label_agreement(outputs, reference, batches)
        return cls(labels, agreement, difference, relative_error(outputs, reference, batches))

    @property
    def passes(self) -> bool:
        return self.agreement >= MIN_LABEL_AGREEMENT and self.error <= MAX_RELATIVE_ERROR


@contextlib.contextmanager
def _quiet():
    """ONNX Runtime's quantizers log warnings on every call (each time, "Please consider to run
    pre-processing before quantization"): an export prints its own lines only."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(previous)


class _CalibrationReader:
    """`onnxruntime.quantization.CalibrationDataReader` of packed batches: each batch's
    graph inputs, once."""

    def __init__(self, batches: Sequence[dict], input_names: Sequence[str]):
        self._feeds = iter([{name: batch[name] for name in input_names} for batch in batches])

    def get_next(self) -> dict | None:
        return next(self._feeds, None)


def _quantizer(model: onnx.ModelProto, mode: str, reduce_range: bool, calibration, directory):
    """A function of the nodes to leave in float32 that quantizes `model` in `mode` (static:
    calibrated once on `calibration`, the ranges cached in `directory`)."""
    from onnxruntime.quantization import (
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )

    always_float32 = always_float32_nodes(model)
    options = {
        "op_types_to_quantize": list(QUANTIZED_OPS[mode]),
        "per_channel": True,
        "reduce_range": reduce_range,
        "weight_type": QuantType.QInt8,
        "use_external_data_format": needs_external_data(model),
        # ONNX's shape inference types no output of a com.microsoft node.
        "extra_options": {"DefaultTensorType": onnx.TensorProto.FLOAT},
    }
    # A matmul's output stays float32 (its next node adds a bias, a residual, a LayerNorm): 8
    # bits would round the sum every block carries.
    static_options = options["extra_options"] | {"OpTypesToExcludeOutputQuantization": ["MatMul"]}
    # The quantizers read a file: given a ModelProto, they may move its weights to external data
    # in a directory of their own, and delete it.
    float32_path, path = Path(directory) / "float32.onnx", Path(directory) / "int8.onnx"
    save_model(model, float32_path)
    input_names = [graph_input.name for graph_input in model.graph.input]

    def quantized(float32_nodes: list[str]) -> onnx.ModelProto:
        excluded = always_float32 + float32_nodes
        with _quiet():
            if mode == "dynamic":
                quantize_dynamic(float32_path, path, nodes_to_exclude=excluded, **options)
            else:
                quantize_static(
                    float32_path,
                    path,
                    _CalibrationReader(calibration, input_names),
                    quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8,
                    calibrate_method=CalibrationMethod.MinMax,
                    calibration_cache_path=Path(directory) / "calibration.json",
                    nodes_to_exclude=excluded,
                    **options | {"extra_options": static_options},
                )
        return onnx.load(str(path))

    return quantized


def quantize_int8(
    model: onnx.ModelProto,
    search_batches: Sequence[dict],
    held_out_batches: Sequence[dict],
    mode: str = "dynamic",
    reduce_range: bool | None = None,
) -> tuple[onnx.ModelProto, Int8Agreement]:
    """The int8 model of a float32 task graph with the fewest of the most sensitive nodes in
    float32 that stays close to it on `search_batches`, accepted if it keeps the labels of
    `held_out_batches` (packed inputs; see the module).

    Raises:
        PrecisionAgreementError: no model with an int8 node meets both bounds on the search
            batches, or the one that does keeps too few held-out labels.
        ConfigError: an unknown mode; the outputs hold no labels (an encoder's embeddings).
    """
    if mode not in INT8_MODES:
        raise ConfigError(f"int8 mode must be one of {INT8_MODES}, got {mode!r}.")
    if reduce_range is None:
        reduce_range = not has_vnni()
    nodes = quantizable_nodes(model, mode)
    if not nodes:
        raise ConfigError(f"This graph has no {' or '.join(QUANTIZED_OPS[mode])} node to quantize.")
    float32_session = inference_session(model)
    reference = session_outputs(float32_session, search_batches)
    held_out_reference = session_outputs(float32_session, held_out_batches)

    with tempfile.TemporaryDirectory() as directory:
        quantized_with = _quantizer(model, mode, reduce_range, search_batches, directory)

        def measured(float32_nodes: list[str]) -> tuple[onnx.ModelProto, AgreementMeasure]:
            quantized = quantized_with(float32_nodes)
            outputs = session_outputs(inference_session(quantized), search_batches)
            return quantized, AgreementMeasure.of(outputs, reference, search_batches)

        sensitivity, tried = {}, []
        for count in range(len(nodes)):
            if count == 1:  # all int8 is too far from float32: rank the nodes
                for node in nodes:
                    _, alone = measured([other for other in nodes if other != node])
                    sensitivity[node] = alone.error
                nodes = sorted(nodes, key=sensitivity.get, reverse=True)
            quantized, search = measured(nodes[:count])
            if search.passes:
                break
            tried.append((search.agreement, search.error))
        else:
            raise PrecisionAgreementError(
                f"No {mode} int8 model agrees with float32 on {MIN_LABEL_AGREEMENT} of "
                f"{search.labels} labels with a relative error of at most {MAX_RELATIVE_ERROR}, "
                f"with up to {len(nodes) - 1} of {len(nodes)} nodes in float32 (best agreement "
                f"{max(tried)[0]:.4f}, smallest error {min(error for _, error in tried):.4f}). "
                "Export in float32."
            )
    held_out_outputs = session_outputs(inference_session(quantized), held_out_batches)
    held_out = AgreementMeasure.of(held_out_outputs, held_out_reference, held_out_batches)
    if held_out.agreement < MIN_LABEL_AGREEMENT:
        raise PrecisionAgreementError(
            f"The {mode} int8 model chosen on the search inputs ({count} of {len(nodes)} nodes "
            f"in float32; agreement {search.agreement:.4f}, error {search.error:.4f}) agrees "
            f"with float32 on {held_out.agreement:.4f} of {held_out.labels} held-out labels (at "
            f"least {MIN_LABEL_AGREEMENT}). Export in float32, or check on more inputs."
        )
    return quantized, Int8Agreement(
        mode=mode,
        labels=held_out.labels,
        label_agreement=held_out.agreement,
        max_probability_difference=held_out.difference,
        relative_error=held_out.error,
        search_labels=search.labels,
        search_label_agreement=search.agreement,
        search_relative_error=search.error,
        per_channel=True,
        reduce_range=reduce_range,
        int8_nodes=len(nodes) - count,
        float32_nodes=always_float32_nodes(model) + nodes[:count],
        sensitivity=sensitivity,
        tried=tried,
    )
