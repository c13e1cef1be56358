"""`export_for_serving`: a serving module → a checked, warmed-up TF Serving model version."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import tensorflow as tf

from keras_bert.export.buckets import bucket_examples
from keras_bert.export.layout import write_version
from keras_bert.export.op_check import check_serving_ops
from keras_bert.export.precision import AgreementTolerance, check_precision
from keras_bert.export.signatures import DEFAULT_SIGNATURE, IDS_SIGNATURE
from keras_bert.export.warmup import warmup_log, write_warmup_requests

AGREEMENT_FILE = Path("assets.extra") / "precision_agreement.json"


def export_for_serving(
    module,
    base_dir: str | os.PathLike,
    name: str,
    version: int | None = None,
    check_ops: bool = True,
    float32_module=None,
    agreement_requests: Sequence[Mapping[str, list]] = (),
    tolerance: AgreementTolerance | None = None,
    write_extra: Callable[[Path], None] | None = None,
) -> Path:
    """Exports a serving module (`keras_bert.export.signatures`) as `<base_dir>/<name>/<version>`.

    The version directory holds the SavedModel (both signatures, `assets/vocab.txt`) and
    `assets.extra/tf_serving_warmup_requests`: the module's example request, one
    `serving_default` request per length bucket (`keras_bert.export.buckets.bucket_examples`)
    and the same requests packed, for `serving_ids`. A bfloat16 or int8 module is first
    compared with `float32_module` on the warm-up requests and `agreement_requests`
    (`check_precision`); the result is written to `assets.extra/precision_agreement.json`. It
    is written to a hidden temporary directory, op-checked against TensorFlow Serving 2.21
    (`keras_bert.export.op_check`) and only then renamed into place, so a server watching
    `<base_dir>/<name>` never sees a partial or unservable version.

    Args:
        module: e.g. `ClassifierServing(classifier, preprocessor)`.
        base_dir: the model base directory (e.g. "saved_models").
        name: the model name, the directory under `base_dir`.
        version: the version number; the next free one if None. Existing versions are never
            overwritten (`VersionExistsError`).
        check_ops: run the op check (`UnsupportedOpError` if it fails).
        float32_module: for a bfloat16 or int8 `module`, the same serving module in float32.
        agreement_requests: more `serving_default` requests (dicts of lists of strings, e.g.
            held-out sentences) for the agreement check.
        write_extra: writes more files into the version directory before it is renamed into
            place (the ONNX export of `pipelines.export --format both`).
        tolerance: what the agreement check allows (`PrecisionAgreementError`); default: the
            precision's (`keras_bert.export.precision.TOLERANCES`).

    Returns:
        The version directory.
    """
    if not name or name.startswith(".") or os.sep in name or name in ("..",):
        raise ValueError(f"A model name is one directory name, got {name!r}.")
    agreement = None
    precision = getattr(module, "precision", "float32")
    if precision != "float32":
        requests = [module.example_inputs(), *bucket_examples(module), *agreement_requests]
        agreement = check_precision(module, float32_module, requests, tolerance)

    def write(export_dir: Path) -> None:
        # Serving runs no gradients: leave out the layers' custom gradients (the GELU one is
        # XLA-compiled, which TensorFlow Serving does not enable by default).
        options = tf.saved_model.SaveOptions(experimental_custom_gradients=False)
        tf.saved_model.save(
            module, str(export_dir), signatures=module.signatures(), options=options
        )
        if check_ops:
            check_serving_ops(export_dir)
        requests = [module.example_inputs(), *bucket_examples(module)]
        packed = [
            module.pack_texts(*(tf.constant(texts) for texts in request.values()))
            for request in requests
        ]
        write_warmup_requests(
            export_dir,
            [warmup_log(name, DEFAULT_SIGNATURE, request) for request in requests]
            + [warmup_log(name, IDS_SIGNATURE, ids) for ids in packed],
        )
        if write_extra is not None:
            write_extra(export_dir)
        if agreement is not None:
            (export_dir / AGREEMENT_FILE).write_text(
                json.dumps({"precision": precision, **dataclasses.asdict(agreement)}, indent=1)
            )

    return write_version(Path(base_dir) / name, write, version)
