"""int8 ONNX exports: ONNX Runtime's dynamic quantization of the fused graph, with the nodes
that move the answers most left in float32.

`quantize_int8` quantizes the weights of every `MatMul` and `Attention` node to int8 with a
scale per output channel (per-channel scales keep the labels better than one per tensor, the
peer's default `quantize_dynamic`), and each activation per call with one scale per tensor
(dynamic quantization: no calibration data). `reduce_range` (7-bit weights) only on a CPU
without VNNI, where the 8-bit products of the older instructions can saturate.

The int8 model must stay close to float32 on the checked inputs: at least
`MIN_LABEL_AGREEMENT` of its labels agree, and the scores the labels are read from (logits,
mask fillers' probabilities) differ from float32's by at most `MAX_RELATIVE_ERROR` of their
size (`relative_error`). Labels alone flatter int8 on inputs the model was trained on: a label
flips only near a tie, and such inputs hold few ties. On the fine-tuned MiniLM sentiment
classifier, 8 of 1,053 training sentences (every 8th) lie within 0.2 of a tie in logit margin
against 20 of the 1,033 held-out dev sentences; all-int8 agreed on 99.15% of the training
slice but on 97.77% of dev. The relative error depends far less on the ties (all-int8: 6.2%
on either of two training slices, 8.0% on dev; with the nine most sensitive nodes in float32:
1.4% and 1.8%), so a bound on it carries over to inputs that were not checked.

If the all-int8 model misses either bound, `quantize_int8` measures each node's sensitivity
(the relative error when only that node is int8: one quantization and one pass over the checked
inputs per node) and leaves nodes in float32 from the most sensitive down, one more at a time,
until the model meets both; the export fails if none does. Activation rounding, not weight
rounding, makes most of the error, and an early block's error grows through every later block:
on MiniLM the first blocks' feed-forward matmuls and attention weights lead the order, the last
blocks' and the head's come last. `Int8Agreement` records what was chosen and measured.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx

from keras_bert.cpu import cpu_features
from keras_bert.errors import ConfigError
from keras_bert.export.onnx.encoder_graph import RELATIVE_TERM_PREFIX
from keras_bert.export.precision import PrecisionAgreementError, label_logits, predictions

# The bar (and the SavedModel int8 check's, `keras_bert.export.precision`).
MIN_LABEL_AGREEMENT = 0.99
# A label flips where the error outgrows float32's margin: with margins spread evenly and
# Gaussian errors, a relative error e flips about 0.23 e of the labels. On MiniLM's held-out dev
# sentences the error was 1.3 times the checked training slice's, so 1.5% on the checked inputs
# comes to about 0.45% of new labels: inside the 1% bar, and at most half a point of accuracy.
MAX_RELATIVE_ERROR = 0.015
QUANTIZED_OPS = ("MatMul", "Attention")


@dataclasses.dataclass(frozen=True)
class Int8Agreement:
    """What `quantize_int8` chose and measured.

    Args:
        labels: labels compared with float32's.
        label_agreement: the share that agree.
        max_probability_difference: the largest |p_int8 - p_float32| of any label.
        relative_error: the label scores' error relative to their size (`relative_error`).
        per_channel: a weight scale per output channel.
        reduce_range: 7-bit weights (a CPU without VNNI).
        int8_nodes: how many `MatMul` and `Attention` nodes are int8.
        float32_nodes: the names of the `MatMul` and `Attention` nodes left in float32.
        sensitivity: each node's relative error when only it is int8 (measured only when the
            all-int8 model is too far from float32).
        tried: (label agreement, relative error) of each model tried before, in order: all
            int8, then the most sensitive node in float32, then the two most, ...
    """

    labels: int
    label_agreement: float
    max_probability_difference: float
    relative_error: float
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


def quantizable_nodes(model: onnx.ModelProto) -> list[str]:
    """The `MatMul` and `Attention` nodes `quantize_int8` may quantize, in graph order
    (DeBERTa's relative-position terms stay float32: their operands are activations)."""
    return [
        node.name
        for node in model.graph.node
        if node.op_type in QUANTIZED_OPS and RELATIVE_TERM_PREFIX not in node.name
    ]


def _session(model: onnx.ModelProto):
    import onnxruntime

    from keras_bert.serving.onnx_model import session_options

    return onnxruntime.InferenceSession(
        model.SerializeToString(), session_options(), providers=["CPUExecutionProvider"]
    )


def _outputs(session, batches: Sequence[dict]) -> list[dict]:
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
        raise ConfigError("int8 exports are checked on labels; this model's outputs hold none.")
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


def quantize_int8(
    model: onnx.ModelProto, batches: Sequence[dict], reduce_range: bool | None = None
) -> tuple[onnx.ModelProto, Int8Agreement]:
    """The int8 model of a float32 task graph that stays close to it on `batches` (packed
    inputs), with the fewest of the most sensitive nodes in float32 (see the module).

    Raises:
        PrecisionAgreementError: no model with an int8 node meets both bounds.
        ConfigError: the outputs hold no labels (an encoder's embeddings).
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    if reduce_range is None:
        reduce_range = not has_vnni()
    nodes = quantizable_nodes(model)
    if not nodes:
        raise ConfigError("This graph has no MatMul or Attention node to quantize.")
    always_float32 = [node.name for node in model.graph.node if RELATIVE_TERM_PREFIX in node.name]
    reference = _outputs(_session(model), batches)

    with tempfile.TemporaryDirectory() as directory:

        def quantized_with(float32_nodes: list[str]) -> tuple[onnx.ModelProto, list[dict]]:
            path = Path(directory) / "int8.onnx"
            quantize_dynamic(
                model,
                path,
                op_types_to_quantize=list(QUANTIZED_OPS),
                per_channel=True,
                reduce_range=reduce_range,
                weight_type=QuantType.QInt8,
                nodes_to_exclude=always_float32 + float32_nodes,
                # ONNX's shape inference types no output of a com.microsoft node.
                extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
            )
            quantized = onnx.load(str(path))
            return quantized, _outputs(_session(quantized), batches)

        sensitivity, tried = {}, []
        for count in range(len(nodes)):
            if count == 1:  # all int8 is too far from float32: rank the nodes
                for node in nodes:
                    _, outputs = quantized_with([other for other in nodes if other != node])
                    sensitivity[node] = relative_error(outputs, reference, batches)
                nodes = sorted(nodes, key=sensitivity.get, reverse=True)
            quantized, outputs = quantized_with(nodes[:count])
            labels, agreement, difference = label_agreement(outputs, reference, batches)
            error = relative_error(outputs, reference, batches)
            if agreement >= MIN_LABEL_AGREEMENT and error <= MAX_RELATIVE_ERROR:
                return quantized, Int8Agreement(
                    labels=labels,
                    label_agreement=agreement,
                    max_probability_difference=difference,
                    relative_error=error,
                    per_channel=True,
                    reduce_range=reduce_range,
                    int8_nodes=len(nodes) - count,
                    float32_nodes=always_float32 + nodes[:count],
                    sensitivity=sensitivity,
                    tried=tried,
                )
            tried.append((agreement, error))
    raise PrecisionAgreementError(
        f"No int8 model agrees with float32 on {MIN_LABEL_AGREEMENT} of {labels} labels with a "
        f"relative error of at most {MAX_RELATIVE_ERROR}, with up to {len(nodes) - 1} of "
        f"{len(nodes)} nodes in float32 (best agreement {max(tried)[0]:.4f}, smallest error "
        f"{min(error for _, error in tried):.4f}). Export in float32."
    )
