"""`--format onnx --precision auto`: float32 or int8 (each of `INT8_MODES`, dynamic and static
quantization), whichever serves faster on this machine (int8 only if its labels agree on held-out
inputs, `quantize_int8`, so auto needs the agreement inputs int8 does): which wins depends on the
CPU's int8 instructions (VNNI, AMX) and on the model, so it is measured where the export runs,
timed through `OnnxModel` as a client calls it (strings in, answers out) on
batch-1 and batch-32 requests, the two taking turns call by call
(`keras_bert.export.precision_choice`, which does the same for SavedModels)."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from keras_bert.errors import ConfigError
from keras_bert.export.onnx.exporter import (
    OnnxExport,
    check_int8_inputs,
    int8_export,
    prepare_onnx,
)
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
    """The fastest of the float32 and int8 exports of `module` that passes its checks, and the
    timing of each (as `choose_precision`'s; int8 named by its mode, `int8_precision`).

    Args:
        module: the float32 serving module.
        requests: `serving_default` requests: the checks' inputs and the timed texts.
        rounds: timed passes over the batches.
        batch1_requests: batch-1 requests per pass.
        intra_op_threads: ONNX Runtime's threads while timing (0: one per core).
        int8_modes: the ways of quantizing to try (`quantize_int8`), each timed if it passes.

    Raises:
        DataError: fewer than `MIN_AGREEMENT_TEXTS` inputs where int8 could be chosen.
    """
    from keras_bert.serving.onnx_model import OnnxModel

    candidates = ["float32", *map(int8_precision, int8_modes)]
    refusals = {}
    try:
        check_int8_inputs(module, requests)
    except ConfigError as error:  # an encoder: no labels to check int8 on, float32 it is
        refusals = {precision: str(error) for precision in candidates[1:]}
    exports = {"float32": prepare_onnx(module, "float32", requests)}
    for mode in int8_modes:
        if int8_precision(mode) in refusals:
            continue
        try:
            exports[int8_precision(mode)] = int8_export(exports["float32"], module, requests, mode)
        except (ConfigError, PrecisionAgreementError) as error:
            refusals[int8_precision(mode)] = str(error)
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
            agreement=_int8_agreement(exports.get(precision)),
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


def _int8_agreement(export: OnnxExport | None) -> Int8Agreement | None:
    if export is None or "int8" not in export.metadata["checks"]:
        return None
    return Int8Agreement(**export.metadata["checks"]["int8"])
