"""`--format onnx --precision auto`: float32, bfloat16 (OpenVINO's, where it is installed and the
CPU has bfloat16 units: `bfloat16_offered`) or int8 (each of `INT8_MODES`, dynamic and static
quantization), whichever serves faster on this machine (a reduced precision only if its labels
agree on held-out inputs, `quantize_int8`, `check_bfloat16`, so auto needs the agreement inputs
they do): which wins depends on the CPU's bfloat16 and int8 instructions (AVX512_BF16, VNNI,
AMX) and on the model, so it is measured where the export runs,
timed through `OnnxModel` as a client calls it (strings in, answers out) on
batch-1 and batch-32 requests, the two taking turns call by call
(`keras_bert.export.precision_choice`, which does the same for SavedModels)."""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from keras_bert.errors import ConfigError
from keras_bert.export.onnx.exporter import (
    OnnxExport,
    bfloat16_export,
    check_agreement_inputs,
    int8_export,
    prepare_onnx,
)
from keras_bert.export.onnx.openvino_bfloat16 import Bfloat16Agreement, bfloat16_offered
from keras_bert.export.onnx.quantization import INT8_MODES, Int8Agreement
from keras_bert.export.precision import PrecisionAgreementError
from keras_bert.export.precision_choice import (
    TIMED_BATCH_SIZES,
    PrecisionTiming,
    _request_batches,
)
from keras_bert.timing import interleaved_median_seconds


def choose_onnx_precision(
    module,
    requests: Sequence[Mapping[str, list]],
    rounds: int = 3,
    batch1_requests: int = 16,
    intra_op_threads: int = 0,
    int8_modes: Sequence[str] = INT8_MODES,
) -> tuple[OnnxExport, list[PrecisionTiming]]:
    """The fastest of the float32, bfloat16 and int8 exports of `module` that passes its checks,
    and the timing of each (as `choose_precision`'s; int8 named by its mode, `int8_precision`;
    bfloat16 only where `bfloat16_offered`).

    Args:
        module: the float32 serving module.
        requests: `serving_default` requests: the checks' inputs and the timed texts.
        rounds: timed passes over the batches.
        batch1_requests: batch-1 requests per pass.
        intra_op_threads: the runtime's threads while timing (0: one per core).
        int8_modes: the ways of quantizing to try (`quantize_int8`), each timed if it passes.

    Raises:
        DataError: fewer than `MIN_AGREEMENT_TEXTS` inputs where int8 could be chosen.
    """
    from keras_bert.serving.onnx_model import OnnxModel

    reduced = {
        int8_precision(mode): functools.partial(int8_export, mode=mode) for mode in int8_modes
    }
    if bfloat16_offered():
        reduced = {"bfloat16": bfloat16_export} | reduced
    candidates = ["float32", *reduced]
    refusals = {}
    try:
        check_agreement_inputs(module, requests)
    except ConfigError as error:  # an encoder: no labels to check on, float32 it is
        refusals = {precision: str(error) for precision in reduced}
    exports = {"float32": prepare_onnx(module, "float32", requests)}
    for precision, reduced_export in reduced.items():
        if precision in refusals:
            continue
        try:
            exports[precision] = reduced_export(exports["float32"], module, requests)
        except (ConfigError, PrecisionAgreementError) as error:
            refusals[precision] = str(error)
    timed = [module.example_inputs(), *requests]
    with tempfile.TemporaryDirectory() as directory:
        models = {}
        for precision, export in exports.items():
            path = Path(directory) / precision.replace(" ", "_")
            path.mkdir()
            export.write(path)
            models[precision] = OnnxModel(path, intra_op_threads=intra_op_threads)
        seconds = {}
        for batch_size in TIMED_BATCH_SIZES:
            batches = [
                [tensor.numpy().tolist() for tensor in batch.values()]
                for batch in _request_batches(timed, batch_size)
            ]
            if batch_size == 1:
                batches = batches[:batch1_requests]
            calls = {
                (precision, batch_size): [
                    lambda model=model, batch=batch: model.predict(*batch) for batch in batches
                ]
                for precision, model in models.items()
            }
            seconds |= interleaved_median_seconds(calls, rounds)
    timings = [
        PrecisionTiming(
            precision,
            1000 * seconds.get((precision, 1), float("nan")),
            1000 * seconds.get((precision, 32), float("nan")),
            agreement=_agreement(exports.get(precision)),
            refused=refusals.get(precision),
        )
        for precision in candidates
    ]
    chosen = min(
        (timing for timing in timings if timing.refused is None),
        key=lambda timing: timing.ms_per_sentence,
    )
    return exports[chosen.precision], timings


def int8_precision(mode: str) -> str:
    """How `choose_onnx_precision` names int8 quantized in `mode`.

    Example:
    >>> int8_precision("static")
    'int8 static'
    """
    return f"int8 {mode}"


def candidate_name(export: OnnxExport) -> str:
    """The name `choose_onnx_precision` times `export` under: "float32" or `int8_precision` of
    its mode."""
    int8_check = export.metadata["checks"].get("int8")
    return int8_precision(int8_check["mode"]) if int8_check else export.metadata["precision"]


def _agreement(export: OnnxExport | None) -> Int8Agreement | Bfloat16Agreement | None:
    """The agreement check a reduced-precision export passed (None for float32)."""
    checks = {} if export is None else export.metadata["checks"]
    if "int8" in checks:
        return Int8Agreement(**checks["int8"])
    if "bfloat16" in checks:
        return Bfloat16Agreement(**checks["bfloat16"])
    return None
