"""`rescaled_embedding_tables`: a checkpoint's embedding tables at another scale, the model's
function unchanged. A pretraining run from scratch publishes its tables at the initializer's
scale, so that fine-tuning moves them as fast as a random model's."""

from __future__ import annotations

import numpy as np

# The tables summed before the embeddings' LayerNorm, by canonical (Google) name.
EMBEDDING_TABLES = (
    "bert/embeddings/word_embeddings",
    "bert/embeddings/token_type_embeddings",
    "bert/embeddings/position_embeddings",
)
EMBEDDING_LAYER_NORM = "bert/embeddings/LayerNorm/gamma"
# The masked-LM head's last LayerNorm, whose output the decoder tied to the token table reads.
TIED_DECODER_INPUT = (
    "cls/predictions/transform/LayerNorm/gamma",
    "cls/predictions/transform/LayerNorm/beta",
)


def rescaled_embedding_tables(
    tensors: dict[str, np.ndarray], rms: float
) -> tuple[dict[str, np.ndarray], float]:
    """`tensors` (a checkpoint's, by canonical name) with every embedding table scaled by one
    factor so that the token table's root mean square is `rms`, and that factor.

    Nothing the checkpoint computes changes. The LayerNorm after the tables' sum undoes the
    factor (up to its epsilon), and the masked-LM head's decoder, tied to the token table, reads
    its last LayerNorm's output divided by the factor. What changes is fine-tuning. Adam's step
    has about one size whatever a weight's scale, and pretraining with it grows the tables: the
    budget recipes' token tables end at RMS 0.077 (ELECTRA) and 0.096 (masked LM), from 0.018.
    Left so, fine-tuning turns them 4-5 times slower, relative to their size, than a random
    model's. On the movie snippets, 3 seeds, at the fine-tuning job's defaults (AMD EPYC, AVX2
    only): ELECTRA's run 56.5% as trained, 62.2% at RMS 0.02, a random model 57.2-57.8%
    (docs/pretraining.md).

    Args:
        tensors: a checkpoint's tensors by canonical name (`encoder_variables` and heads).
        rms: the token table's root mean square after (`BertConfig.initializer_range` for the
            initializer's scale).

    Returns:
        The rescaled tensors (the others as they were) and the factor; a checkpoint without a
        LayerNorm after its embeddings is returned as it is, with factor 1.0.

    Example:
    >>> rng = np.random.default_rng(0)
    >>> tensors = {name: rng.normal(0, 0.1, (8, 4)) for name in EMBEDDING_TABLES}
    >>> tensors[EMBEDDING_LAYER_NORM] = np.ones(4)
    >>> scaled, factor = rescaled_embedding_tables(tensors, rms=0.02)
    >>> round(float(np.sqrt(np.mean(scaled["bert/embeddings/word_embeddings"] ** 2))), 4)
    0.02
    >>> bool(np.allclose(scaled["bert/embeddings/position_embeddings"],
    ...                  factor * tensors["bert/embeddings/position_embeddings"]))
    True
    """
    if rms <= 0:
        raise ValueError(f"rms must be positive, got {rms}.")
    if EMBEDDING_LAYER_NORM not in tensors:
        return tensors, 1.0
    token_table = tensors[EMBEDDING_TABLES[0]]
    factor = rms / float(np.sqrt(np.mean(np.square(token_table, dtype=np.float64))))
    rescaled = dict(tensors)
    for name in EMBEDDING_TABLES:
        if name in tensors:
            rescaled[name] = (tensors[name] * factor).astype(tensors[name].dtype)
    for name in TIED_DECODER_INPUT:
        if name in tensors:
            rescaled[name] = (tensors[name] / factor).astype(tensors[name].dtype)
    return rescaled, factor
