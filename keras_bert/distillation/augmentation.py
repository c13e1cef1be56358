"""Unlabeled text for task distillation made from the training texts (Tang et al. 2019,
"Distilling Task-Specific Knowledge from BERT into Simple Neural Networks"): words masked at
random and short n-grams sampled; the teacher labels the variants through its soft targets."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from keras_bert.text.special_tokens import MASK_TOKEN


def augment_texts(
    texts: Sequence[str],
    copies: int,
    mask_probability: float = 0.1,
    ngram_probability: float = 0.25,
    max_ngram_length: int = 5,
    seed: int = 0,
) -> list[str]:
    """`copies` variants of every text: each word becomes `[MASK]` with `mask_probability`,
    then with `ngram_probability` the variant is cut to a random n-gram of 1 to
    `max_ngram_length` words. Variants equal to their text are left out.

    Example:
    >>> augment_texts(["a gripping , beautifully shot film"], copies=4, seed=0)
    ['a gripping [MASK] [MASK] shot film', ', beautifully [MASK] film', 'shot']
    """
    rng = np.random.default_rng(seed)
    variants = []
    for _ in range(copies):
        for text in texts:
            words = text.split()
            if not words:
                continue
            masked = rng.random(len(words)) < mask_probability
            words = [MASK_TOKEN if mask else word for word, mask in zip(words, masked, strict=True)]
            if rng.random() < ngram_probability:
                length = int(rng.integers(1, min(max_ngram_length, len(words)) + 1))
                start = int(rng.integers(0, len(words) - length + 1))
                words = words[start : start + length]
            variant = " ".join(words)
            if variant != " ".join(text.split()):
                variants.append(variant)
    return variants
