"""Query exported keras_bert models the way TensorFlow Serving runs them.

This script imports only `tensorflow` and `tensorflow_text` (what TF Serving links), loads a
SavedModel version directory and calls its `serving_default` signature on raw strings:

    python pipelines/query_export.py saved_models/sentiment/1 "A wonderful film." "Dull."

It prints the signature's outputs as JSON, one object per input text.
"""

import json
import sys

import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops the SavedModel uses)


def query(export_dir: str, texts: list[str]) -> list[dict]:
    signature = tf.saved_model.load(export_dir).signatures["serving_default"]
    outputs = signature(text=tf.constant(texts))
    rows = []
    for index in range(len(texts)):
        row = {"text": texts[index]}
        for name, tensor in outputs.items():
            value = tensor[index].numpy()
            value = value.tolist() if hasattr(value, "tolist") else value
            row[name] = value.decode() if isinstance(value, bytes) else value
        rows.append(row)
    return rows


def decoded(value):
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, list):
        return [decoded(item) for item in value]
    return value


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    results = query(sys.argv[1], sys.argv[2:])
    print(json.dumps([{key: decoded(value) for key, value in row.items()} for row in results]))
