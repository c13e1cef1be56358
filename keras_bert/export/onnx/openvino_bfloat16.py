"""bfloat16 ONNX exports: the float32 graph, computed in bfloat16 by OpenVINO's CPU plugin.

ONNX Runtime's CPU kernels multiply in float32 or int8. OpenVINO computes the same float32
`model.onnx` in bfloat16 when asked (its inference precision hint: matmuls on AMX or
AVX512_BF16 units, accumulated in float32), so a bfloat16 export is the float32 file with
`keras_bert.json` naming OpenVINO in bfloat16 as the runtime `OnnxModel` opens
(`keras_bert.serving.graph_runtimes`). On a CPU without bfloat16 units OpenVINO emulates it,
slower than float32; `--precision auto` offers it only where the units are.

Its labels are checked as int8's are (`keras_bert.export.onnx.quantization`): on the held-out
half of the agreement inputs, at least `MIN_LABEL_AGREEMENT` of the labels agree with float32's
and the scores they are read from differ by at most `MAX_RELATIVE_ERROR` of their size. Nothing
is chosen on the other half: bfloat16 has no nodes to leave in float32. On the fine-tuned
MiniLM-L6 sentiment classifier all 1,033 dev sentences but one kept their label (99.90%),
relative error 0.32% (Intel Xeon with AMX, OpenVINO 2026.4).
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import onnx

from keras_bert.cpu import has_bfloat16_units
from keras_bert.errors import ConfigError
from keras_bert.export.onnx.model_files import inference_session, save_model
from keras_bert.export.onnx.quantization import (
    MAX_RELATIVE_ERROR,
    MIN_LABEL_AGREEMENT,
    AgreementMeasure,
    session_outputs,
)
from keras_bert.export.precision import PrecisionAgreementError
from keras_bert.serving.graph_runtimes import OpenVinoSession

# What `keras_bert.json`'s `runtime` says of a bfloat16 export (`OnnxModel` opens it so).
BFLOAT16_RUNTIME = {"name": "openvino", "inference_precision": "bfloat16"}


@dataclasses.dataclass(frozen=True)
class Bfloat16Agreement:
    """What `check_bfloat16` measured on the held-out inputs.

    Args:
        labels: labels compared with float32's.
        label_agreement: the share of them that agree.
        max_probability_difference: the largest |p_bfloat16 - p_float32| of a label.
        relative_error: the label scores' error relative to their size (`relative_error`).
        runtime: the runtime that computed bfloat16.
    """

    labels: int
    label_agreement: float
    max_probability_difference: float
    relative_error: float
    runtime: str = BFLOAT16_RUNTIME["name"]


def openvino_session(
    model: onnx.ModelProto, output_axes: Mapping[str, Sequence], directory: str | Path
) -> OpenVinoSession:
    """`model` (written into `directory`) compiled by OpenVINO in bfloat16.

    Raises:
        ConfigError: OpenVINO is not installed.
    """
    try:
        import openvino  # noqa: F401
    except ImportError:
        raise ConfigError(
            "bfloat16 ONNX exports run in OpenVINO: pip install openvino (or export float32 "
            "or int8)."
        ) from None
    path = Path(directory) / "model.onnx"
    save_model(model, path)
    return OpenVinoSession(path, output_axes, inference_precision="bfloat16")


def check_bfloat16(
    model: onnx.ModelProto, output_axes: Mapping[str, Sequence], held_out_batches: Sequence[dict]
) -> Bfloat16Agreement:
    """OpenVINO's bfloat16 answers against ONNX Runtime's float32 ones on `held_out_batches`
    (packed inputs; see the module).

    Raises:
        PrecisionAgreementError: too few labels agree, or the scores move too far.
        ConfigError: OpenVINO is not installed; the outputs hold no labels.
    """
    reference = session_outputs(inference_session(model), held_out_batches)
    with tempfile.TemporaryDirectory() as directory:
        session = openvino_session(model, output_axes, directory)
        outputs = session_outputs(session, held_out_batches)
    measure = AgreementMeasure.of(outputs, reference, held_out_batches)
    if not measure.passes:
        raise PrecisionAgreementError(
            f"OpenVINO's bfloat16 agrees with float32 on {measure.agreement:.4f} of "
            f"{measure.labels} held-out labels (at least {MIN_LABEL_AGREEMENT}), relative error "
            f"{measure.error:.4f} (at most {MAX_RELATIVE_ERROR}). Export in float32."
        )
    return Bfloat16Agreement(measure.labels, measure.agreement, measure.difference, measure.error)


def bfloat16_offered() -> bool:
    """Whether `--precision auto` tries bfloat16: OpenVINO is installed and this CPU multiplies
    bfloat16 in hardware (`has_bfloat16_units`)."""
    try:
        import openvino  # noqa: F401
    except ImportError:
        return False
    return has_bfloat16_units()
