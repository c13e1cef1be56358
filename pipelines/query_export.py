"""Query exported keras_bert models the way TensorFlow Serving runs them.

This script imports only `tensorflow` and `tensorflow_text` (what TF Serving links), loads a
SavedModel version directory as the model server does (`SessionModel`) and runs its
`serving_default` signature on raw strings:

    python pipelines/query_export.py saved_models/sentiment/1 "A wonderful film." "Dull."

A model's directory (`saved_models/sentiment`) serves its newest version, as the server does.

It prints the signature's outputs as JSON, one object per input text. Tests load exports with
it too (`tests/export/fresh_process.py`), from this file's path: the package `pipelines`
imports keras_bert.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops the SavedModel uses)


class SessionModel:
    """A SavedModel loaded as TensorFlow Serving's `LoadSavedModel` loads it.

    The graph goes into a session, the saver's restore op restores the variables, and a
    signature runs by the tensor names of its `SignatureDef`. `tf.saved_model.load` revives
    the saved Python objects instead, and can run an export whose graph fails in a model
    server (a Keras variable saved apart from the one the graph reads: keras-team/keras#19274).

    Example (the export written with keras_bert, then loaded without it):
    >>> import tempfile
    >>> from keras_bert import BertConfig, BertEncoder
    >>> from keras_bert.export import ClassifierServing, export_for_serving
    >>> from keras_bert.models import BertClassifier
    >>> from keras_bert.text import BertPreprocessor
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "good", "film"]
    >>> preprocessor = BertPreprocessor(vocabulary, seq_length=8)
    >>> classifier = BertClassifier(BertEncoder(BertConfig.preset("tiny", vocab_size=7)), 2)
    >>> module = ClassifierServing(classifier, preprocessor)
    >>> export_dir = export_for_serving(module, tempfile.mkdtemp(), "sentiment")
    >>> model = SessionModel(str(export_dir))
    >>> outputs = model.run({"text": ["A good film.", ""]})
    >>> outputs["probabilities"].shape, outputs["label"].shape
    ((2, 2), (2,))
    >>> model.run({"texts": ["A good film."]})
    Traceback (most recent call last):
    ValueError: serving_default takes inputs ['text'], got ['texts'].
    >>> model.close()
    >>> [(row["text"], row["label"] in ("0", "1")) for row in query(str(export_dir), ["A film."])]
    [('A film.', True)]
    """

    def __init__(self, export_dir: str, intra_op_threads: int = 0, inter_op_threads: int = 0):
        """Loads `export_dir` into a session whose thread pools are the server's
        `--tensorflow_intra_op_parallelism` (threads inside one op) and
        `--tensorflow_inter_op_parallelism` (ops run at once); 0 leaves each to TensorFlow
        (one per core). TensorFlow sizes the intra-op pool at the first session a process
        opens, and later sessions share it whatever they ask (a 2,048-square matmul on 2 cores:
        79 ms with 2 threads, then 82 in a second session asking for 1): one setting a
        process, as one server has."""
        config = tf.compat.v1.ConfigProto(
            intra_op_parallelism_threads=intra_op_threads,
            inter_op_parallelism_threads=inter_op_threads,
        )
        self.session = tf.compat.v1.Session(graph=tf.Graph(), config=config)
        with self.session.graph.as_default():
            meta_graph = tf.compat.v1.saved_model.load(self.session, ["serve"], export_dir)
        self.signatures = dict(meta_graph.signature_def)

    def run(self, inputs: dict, signature: str = "serving_default") -> dict[str, np.ndarray]:
        """The outputs of `signature` on `inputs` (lists or arrays by input name)."""
        if signature not in self.signatures:
            names = sorted(self.signatures)
            raise ValueError(f"No signature {signature!r}; the export has {names}.")
        signature_def = self.signatures[signature]
        if set(inputs) != set(signature_def.inputs):
            raise ValueError(
                f"{signature} takes inputs {sorted(signature_def.inputs)}, got {sorted(inputs)}."
            )
        feeds = {signature_def.inputs[name].name: value for name, value in inputs.items()}
        names = list(signature_def.outputs)
        values = self.session.run([signature_def.outputs[name].name for name in names], feeds)
        return dict(zip(names, values, strict=True))

    def close(self) -> None:
        self.session.close()


def served_version(path: str) -> str:
    """The version directory TF Serving serves for `path`: `path` itself when it holds a
    SavedModel, else its newest version (the highest numbered subdirectory holding one, the
    server's default version policy).

    Raises:
        ValueError: neither, naming what `path` holds.

    Example:
    >>> import tempfile
    >>> model_dir = Path(tempfile.mkdtemp())
    >>> for version in ("1", "2", "10"):
    ...     (model_dir / version).mkdir()
    ...     _ = (model_dir / version / "saved_model.pb").write_bytes(b"")
    >>> Path(served_version(str(model_dir))).name
    '10'
    """
    directory = Path(path)
    if (directory / "saved_model.pb").is_file():
        return path
    versions = [
        child
        for child in (directory.iterdir() if directory.is_dir() else ())
        if child.name.isdigit() and (child / "saved_model.pb").is_file()
    ]
    if not versions:
        raise ValueError(
            f"{path} holds no SavedModel (saved_model.pb) and no version directory with one: "
            "give an export's version directory, e.g. saved_models/sentiment/1."
        )
    return str(max(versions, key=lambda child: int(child.name)))


def query(export_dir: str, texts: list[str]) -> list[dict]:
    """One row per text: the text and the `serving_default` outputs of its row; `export_dir`
    is a version directory or a model's directory (its newest version, `served_version`)."""
    model = SessionModel(served_version(export_dir))
    try:
        outputs = model.run({"text": texts})
    finally:
        model.close()
    columns = {name: decoded(value.tolist()) for name, value in outputs.items()}
    return [
        {"text": text, **{name: column[index] for name, column in columns.items()}}
        for index, text in enumerate(texts)
    ]


def decoded(value):
    """`value` with its bytes decoded from UTF-8, in lists too."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, list):
        return [decoded(item) for item in value]
    return value


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    try:
        print(json.dumps(query(sys.argv[1], sys.argv[2:])))
    except (OSError, ValueError) as error:
        sys.exit(f"error: {error}")
