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

import tensorflow as tf


@functools.cache
def tf_text() -> types.ModuleType:
    """The `tensorflow_text` module, imported on the first call."""
    return importlib.import_module("tensorflow_text")


def regex_split_with_offsets(
    texts: tf.Tensor, delimiters: str, kept_delimiters: str = ""
) -> tuple[tf.RaggedTensor, tf.RaggedTensor, tf.RaggedTensor]:
    """tensorflow-text's `regex_split_with_offsets` of a `[batch]` string tensor: the pieces
    between matches of `delimiters`, and the matches that `kept_delimiters` (a part of
    `delimiters`) also matches, with their byte offsets `[start, end)`, ragged
    `[batch, (pieces)]`.

    The same op, without the checks tensorflow-text's wrapper adds to the row partition the
    op itself returns: three assertions a result, each a conditional that every batch runs
    (the WordPiece preprocessor of text pairs: 404 of its 1,203 graph ops were these checks,
    24 conditionals and their inputs; it traces in half the time without them).

    Example:
    >>> words, starts, ends = regex_split_with_offsets(tf.constant(["ab, c"]), r"\s+|,", ",")
    >>> words.to_list(), starts.to_list(), ends.to_list()
    ([[b'ab', b',', b'c']], [[0, 2, 4]], [[2, 3, 5]])
    """
    split_ops = importlib.import_module("tensorflow_text.python.ops.regex_split_ops")
    pieces, starts, ends, row_splits = split_ops.gen_regex_split_ops.regex_split_with_offsets(
        texts, f"({delimiters})".encode(), f"({kept_delimiters})".encode()
    )
    return tuple(
        tf.RaggedTensor.from_row_splits(values, row_splits, validate=False)
        for values in (pieces, starts, ends)
    )
