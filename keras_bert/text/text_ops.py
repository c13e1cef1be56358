"""tensorflow-text, imported when a tokenizer first needs its ops.

Its op libraries take about 110 MB of a process's resident memory (measured with
`/proc/self/status` on TensorFlow 2.21: `RssFile` grows from 494 to 606 MB). An encoder, a
training job on packed ids or a long-input benchmark loads none of its ops, and
`keras_bert.load_encoder` pulled it in only because the model classes import the text
modules. A SavedModel with text signatures still needs `import tensorflow_text` in the process
that loads it (TensorFlow Serving links it; `pipelines.query_export` imports it).

Example:
>>> tf_text().normalize_utf8(["Ａ"], "NFKC").numpy().tolist()
[b'A']
"""

import functools
import importlib
import types


@functools.cache
def tf_text() -> types.ModuleType:
    """The `tensorflow_text` module, imported on the first call."""
    return importlib.import_module("tensorflow_text")
