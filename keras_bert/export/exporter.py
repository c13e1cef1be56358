"""`export_for_serving`: a serving module → a checked, warmed-up TF Serving model version."""

from __future__ import annotations

import os
from pathlib import Path

import tensorflow as tf

from keras_bert.export.layout import write_version
from keras_bert.export.op_check import check_serving_ops
from keras_bert.export.signatures import DEFAULT_SIGNATURE, IDS_SIGNATURE
from keras_bert.export.warmup import warmup_log, write_warmup_requests


def export_for_serving(
    module,
    base_dir: str | os.PathLike,
    name: str,
    version: int | None = None,
    check_ops: bool = True,
) -> Path:
    """Exports a serving module (`keras_bert.export.signatures`) as `<base_dir>/<name>/<version>`.

    The version directory holds the SavedModel (both signatures, `assets/vocab.txt`) and
    `assets.extra/tf_serving_warmup_requests` (a request to each signature, from the module's
    example inputs). It is written to a hidden temporary directory, op-checked against
    TensorFlow Serving 2.21 (`keras_bert.export.op_check`) and only then renamed into place, so
    a server watching `<base_dir>/<name>` never sees a partial or unservable version.

    Args:
        module: e.g. `ClassifierServing(classifier, preprocessor)`.
        base_dir: the model base directory (e.g. "saved_models").
        name: the model name, the directory under `base_dir`.
        version: the version number; the next free one if None. Existing versions are never
            overwritten (`VersionExistsError`).
        check_ops: run the op check (`UnsupportedOpError` if it fails).

    Returns:
        The version directory.
    """
    if not name or name.startswith(".") or os.sep in name or name in ("..",):
        raise ValueError(f"A model name is one directory name, got {name!r}.")

    def write(export_dir: Path) -> None:
        # Serving runs no gradients: leave out the layers' custom gradients (the GELU one is
        # XLA-compiled, which TensorFlow Serving does not enable by default).
        options = tf.saved_model.SaveOptions(experimental_custom_gradients=False)
        tf.saved_model.save(
            module, str(export_dir), signatures=module.signatures(), options=options
        )
        if check_ops:
            check_serving_ops(export_dir)
        examples = module.example_inputs()
        first_texts = next(iter(examples.values()))
        ids = module.preprocessor(tf.constant(first_texts))
        write_warmup_requests(
            export_dir,
            [
                warmup_log(name, DEFAULT_SIGNATURE, examples),
                warmup_log(name, IDS_SIGNATURE, ids),
            ],
        )

    return write_version(Path(base_dir) / name, write, version)
