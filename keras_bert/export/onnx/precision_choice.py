"""`--format onnx --precision auto`: float32 or int8, whichever serves faster on this machine
(int8 only if its labels agree on held-out inputs, `quantize_int8`, so auto needs the agreement
inputs int8 does), timed through `OnnxModel` as a client calls it (strings in, answers out) on
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
from keras_bert.export.onnx.quantization import Int8Agreement
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
    int8_mode: str = "dynamic",
) -> tuple[OnnxExport, list[PrecisionTiming]]:
    """The faster of the float32 and int8 exports of `module` that passes its checks, and the
    timing of each (as `choose_precision`'s).

    Args:
        module: the float32 serving module.
        requests: `serving_default` requests: the checks' inputs and the timed texts.
        rounds: timed passes over the batches.
        batch1_requests: batch-1 requests per pass.
        intra_op_threads: ONNX Runtime's threads while timing (0: one per core).
        int8_mode: how int8 quantizes ("dynamic" or "static", `quantize_int8`).

    Raises:
        DataError: fewer than `MIN_AGREEMENT_TEXTS` inputs where int8 could be chosen.
    """
    from keras_bert.serving.onnx_model import OnnxModel

    refusals = {}
    try:
        check_int8_inputs(module, requests)
    except ConfigError as error:  # an encoder: no labels to check int8 on, float32 it is
        refusals["int8"] = str(error)
    exports = {"float32": prepare_onnx(module, "float32", requests)}
    if "int8" not in refusals:
        try:
            exports["int8"] = int8_export(exports["float32"], module, requests, int8_mode)
        except (ConfigError, PrecisionAgreementError) as error:
            refusals["int8"] = str(error)
    timed = [module.example_inputs(), *requests]
    with tempfile.TemporaryDirectory() as directory:
        models = {}
        for precision, export in exports.items():
            path = Path(directory) / precision
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
        for precision in ("float32", "int8")
    ]
    chosen = min(
        (timing for timing in timings if timing.refused is None),
        key=lambda timing: timing.ms_per_sentence,
    )
    return exports[chosen.precision], timings


def _int8_agreement(export: OnnxExport | None) -> Int8Agreement | None:
    if export is None or "int8" not in export.metadata["checks"]:
        return None
    return Int8Agreement(**export.metadata["checks"]["int8"])
