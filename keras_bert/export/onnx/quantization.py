"""int8 ONNX exports: ONNX Runtime's dynamic quantization of the fused graph, with the nodes
that move labels left in float32.

`quantize_int8` quantizes the weights of every `MatMul` and `Attention` node to int8 with a
scale per output channel (per-channel scales keep the labels better than one per tensor, the
peer's default `quantize_dynamic`), and each activation per call (dynamic quantization: no
calibration data). `reduce_range` (7-bit weights) only on a CPU without VNNI, where the 8-bit
products of the older instructions can saturate. If the labels then agree with float32's on
fewer than `MIN_LABEL_AGREEMENT` of the checked inputs, nodes go back to float32 one group at a
time, the cheapest first: the task head and pooler, then each block's feed-forward output
projection from the last block down, until the labels agree; the export fails if none does.
`Int8Agreement` records what was chosen and measured.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx

from keras_bert.errors import ConfigError
from keras_bert.export.cpu import cpu_features
from keras_bert.export.onnx.encoder_graph import RELATIVE_TERM_PREFIX
from keras_bert.export.precision import PrecisionAgreementError, predictions

# The bar (and the SavedModel's int8 tolerance, `keras_bert.export.precision`).
MIN_LABEL_AGREEMENT = 0.99
QUANTIZED_OPS = ("MatMul", "Attention")


@dataclasses.dataclass(frozen=True)
class Int8Agreement:
    """What `quantize_int8` chose and measured.

    Args:
        labels: labels compared with float32's.
        label_agreement: the share that agree.
        max_probability_difference: the largest |p_int8 - p_float32| of any label.
        per_channel: a weight scale per output channel.
        reduce_range: 7-bit weights (a CPU without VNNI).
        float32_nodes: the names of the nodes left in float32.
        tried: the agreement of each configuration tried before, in order.
    """

    labels: int
    label_agreement: float
    max_probability_difference: float
    per_channel: bool
    reduce_range: bool
    float32_nodes: list[str]
    tried: list[float]


def has_vnni() -> bool:
    """Whether this CPU has int8 dot-product instructions (AVX512_VNNI, AVX-VNNI or AMX)."""
    features = cpu_features()
    return features["avx512_vnni"] or features["avx_vnni"] or features["amx_int8"]


def exclusion_groups(model: onnx.ModelProto) -> list[list[str]]:
    """Groups of quantizable nodes to leave in float32, in the order tried: each block's
    feed-forward output projection, last block first, then the nodes outside the blocks (head,
    pooler, embedding projection)."""
    quantizable = [
        node.name
        for node in model.graph.node
        if node.op_type in QUANTIZED_OPS and RELATIVE_TERM_PREFIX not in node.name
    ]
    in_blocks = [name for name in quantizable if name.startswith(("block_", "group_"))]
    outside = [name for name in quantizable if name not in in_blocks]
    feed_forward_outputs = [name for name in in_blocks if name.endswith("/output")]
    return [[name] for name in reversed(feed_forward_outputs)] + [outside]


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


def quantize_int8(
    model: onnx.ModelProto, batches: Sequence[dict], reduce_range: bool | None = None
) -> tuple[onnx.ModelProto, Int8Agreement]:
    """The int8 model of a float32 task graph whose labels agree with float32's on `batches`
    (packed inputs) on at least `MIN_LABEL_AGREEMENT` (see the module).

    Raises:
        PrecisionAgreementError: no configuration agrees.
        ConfigError: the outputs hold no labels (an encoder's embeddings).
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    if reduce_range is None:
        reduce_range = not has_vnni()
    reference = _outputs(_session(model), batches)
    excluded = [node.name for node in model.graph.node if RELATIVE_TERM_PREFIX in node.name]
    tried = []
    with tempfile.TemporaryDirectory() as directory:
        for group in [[], *exclusion_groups(model)]:
            excluded = excluded + group
            path = Path(directory) / f"int8_{len(tried)}.onnx"
            quantize_dynamic(
                model,
                path,
                op_types_to_quantize=list(QUANTIZED_OPS),
                per_channel=True,
                reduce_range=reduce_range,
                weight_type=QuantType.QInt8,
                nodes_to_exclude=excluded,
                # ONNX's shape inference types no output of a com.microsoft node.
                extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
            )
            quantized = onnx.load(str(path))
            labels, agreement, difference = label_agreement(
                _outputs(_session(quantized), batches), reference, batches
            )
            if agreement >= MIN_LABEL_AGREEMENT:
                return quantized, Int8Agreement(
                    labels, agreement, difference, True, reduce_range, excluded, tried
                )
            tried.append(agreement)
    raise PrecisionAgreementError(
        f"int8 labels agree with float32's on at most {max(tried):.4f} of {labels} (at least "
        f"{MIN_LABEL_AGREEMENT} needed), with every block's feed-forward output in float32. "
        "Export in float32."
    )
