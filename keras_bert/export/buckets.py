"""Warm-up requests of a serving module, one per length bucket (`keras_bert.decoding.buckets`),
so that the server runs (and XLA compiles) every bucket's shape before traffic."""

from __future__ import annotations

import tensorflow as tf


def cycled_words(text: str, count: int) -> str:
    """`count` words of `text`, its words repeated in order (an empty text repeats "a").

    Example:
    >>> cycled_words("one two", 5)
    'one two one two one'
    """
    words = text.split() or ["a"]
    return " ".join(words[index % len(words)] for index in range(count))


def bucket_examples(module) -> list[dict[str, list[str]]]:
    """One-row `serving_default` requests, one per bucket of a serving module.

    Each repeats the words of the first row of `module.example_inputs()` (every input of it, so
    pairs and questions grow too) until the packed length lands in the bucket: warm-up records
    of these make the server run (and XLA compile) every bucket's shape before traffic.
    """
    examples = module.example_inputs()
    counts = range(1, module.preprocessor.seq_length + 1)  # >= 1 word piece per word
    lengthened = {
        name: [cycled_words(values[0], count) for count in counts]
        for name, values in examples.items()
    }
    packed = module.pack_texts(*(tf.constant(texts) for texts in lengthened.values()))
    lengths = tf.reduce_sum(packed["input_mask"], axis=1).numpy()
    requests, shorter = [], 0
    for bucket in module.buckets:
        fits = [row for row, length in enumerate(lengths) if shorter < length <= bucket]
        if fits:
            requests.append({name: [texts[fits[0]]] for name, texts in lengthened.items()})
        shorter = bucket
    return requests
