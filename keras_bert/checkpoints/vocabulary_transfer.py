"""A checkpoint moved onto a new vocabulary (domain models such as SciBERT and BioBERT)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

import numpy as np

from keras_bert.checkpoints.checkpoint import Checkpoint

logger = logging.getLogger(__name__)

# The tensors with one row (or entry) per vocabulary id.
TOKEN_EMBEDDING = "bert/embeddings/word_embeddings"
MASKED_LM_BIAS = "cls/predictions/output_bias"


def transfer_vocabulary(
    checkpoint: Checkpoint,
    old_vocabulary: Sequence[str],
    new_vocabulary: Sequence[str],
    seed: int = 0,
) -> Checkpoint:
    """`checkpoint` with its token embeddings (and masked-LM output bias) re-indexed by
    `new_vocabulary`: a piece both vocabularies hold keeps its trained row, a new piece gets a
    fresh one (normal, the config's `initializer_range`; bias 0).

    Args:
        checkpoint: the pretrained checkpoint.
        old_vocabulary: its tokens, in id order.
        new_vocabulary: the tokens of the new vocabulary (e.g. from `pipelines.build_vocab`).
        seed: the seed of the fresh rows.

    Example:
    >>> from keras_bert import BertConfig
    >>> config = BertConfig.preset("tiny", vocab_size=3)
    >>> tensors = {TOKEN_EMBEDDING: np.arange(3 * 128, dtype="float32").reshape(3, 128)}
    >>> old = Checkpoint(config, tensors, directory=None, source="example")
    >>> new = transfer_vocabulary(old, ["[PAD]", "cat", "dog"], ["[PAD]", "dog", "fish", "cat"])
    >>> rows = new.tensors[TOKEN_EMBEDDING]
    >>> new.config.vocab_size, float(rows[1, 0]), float(rows[3, 0])  # "dog", "cat" kept
    (4, 256.0, 128.0)
    """
    old_index = {token: index for index, token in enumerate(old_vocabulary)}
    kept = np.array([old_index.get(token, -1) for token in new_vocabulary])
    is_kept = kept >= 0
    rng = np.random.default_rng(seed)
    tensors = dict(checkpoint.tensors)
    embeddings = tensors[TOKEN_EMBEDDING]
    fresh = rng.normal(
        0.0, checkpoint.config.initializer_range, (len(new_vocabulary), embeddings.shape[1])
    ).astype(np.float32)
    tensors[TOKEN_EMBEDDING] = np.where(is_kept[:, None], embeddings[np.maximum(kept, 0)], fresh)
    if MASKED_LM_BIAS in tensors:
        bias = tensors[MASKED_LM_BIAS]
        tensors[MASKED_LM_BIAS] = np.where(is_kept, bias[np.maximum(kept, 0)], 0.0).astype(
            np.float32
        )
    logger.info(
        "New vocabulary of %d pieces: %d kept their trained embeddings, %d start fresh.",
        len(new_vocabulary),
        int(is_kept.sum()),
        int((~is_kept).sum()),
    )
    config = checkpoint.config.replace(vocab_size=len(new_vocabulary))
    return dataclasses.replace(checkpoint, config=config, tensors=tensors)
