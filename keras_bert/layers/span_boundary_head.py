"""SpanBERT's span-boundary objective (SBO): each masked token predicted from the two tokens
that bound its masked span and its offset in the span, not from its own vector."""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops

from keras_bert.layers.masked_lm_head import TiedDecoderHead, vectors_at


def span_boundaries(masked_positions: tf.Tensor, sequence_length: int | tf.Tensor):
    """The bounds of each prediction's span: the unmasked positions just before and just after
    the run of consecutive masked positions it lies in, and its offset in that run.

    A span is a maximal run of consecutive positions among `masked_positions`, so this holds
    for SpanBERT's spans and for BERT's single tokens alike (two adjacent masked tokens bound
    each other's span). Position 0 (`[CLS]`, and the padding of `masked_lm_positions`) is never
    masked; padding predictions get bounds too, and their weights keep them out of the loss.

    Args:
        masked_positions: int `[batch, predictions]`, in any order.
        sequence_length: the packed length.

    Returns:
        `(left, right, offset)`, int32 `[batch, predictions]` each: offset 0 is the span's first
        token.

    Example:
    >>> left, right, offset = span_boundaries(tf.constant([[2, 3, 4, 7, 0]]), 10)
    >>> left.numpy().tolist(), right.numpy().tolist(), offset.numpy().tolist()
    ([[1, 1, 1, 6, 0]], [[5, 5, 5, 8, 1]], [[0, 1, 2, 0, 0]])
    """
    positions = ops.cast(masked_positions, "int32")
    sequence = ops.arange(sequence_length, dtype="int32")
    masked = ops.any(positions[:, :, None] == sequence[None, None, :], axis=1)
    unmasked = ~masked | (sequence == 0)[None, :]
    # The unmasked positions in order (then `sequence_length`, never read), and how many of
    # them lie at or before each position: a masked position's bounds are the last of those
    # before it and the next one after it.
    unmasked_positions = ops.sort(ops.where(unmasked, sequence[None, :], sequence_length), axis=1)
    count = ops.cumsum(ops.cast(unmasked, "int32"), axis=1)
    left = ops.take_along_axis(unmasked_positions, count - 1, axis=1)
    # A span running to the end (no [SEP] after it) takes the last position as its right bound.
    right = ops.minimum(
        ops.take_along_axis(unmasked_positions, ops.minimum(count, sequence_length - 1), axis=1),
        sequence_length - 1,
    )
    offset = ops.maximum(sequence[None, :] - left - 1, 0)
    return tuple(ops.take_along_axis(bound, positions, axis=1) for bound in (left, right, offset))


@keras.saving.register_keras_serializable(package="keras_bert")
class SpanBoundaryHead(TiedDecoderHead):
    """Predicts masked tokens from their span's boundary tokens (SpanBERT, Joshi et al. 2020).

    For a masked token at offset `i` of a span bounded by positions `s − 1` and `e + 1`, the
    head decodes `LN(act(W2 · LN(act(W1 · [x_{s−1}; x_{e+1}; p_i]))))` through the token
    embeddings (tied, with an output bias of its own), where `p_i` is a learned offset
    embedding. The loss is the masked-LM cross-entropy against the same targets, added to the
    masked-LM loss (`BertPretrainer(span_boundary_objective=True)`).

    Args:
        token_embedding: the encoder's `keras.layers.Embedding` to tie the decoder to.
        max_span_offset: offsets at or beyond it share the last offset embedding (SpanBERT's
            spans are at most 10 words).
        **kwargs: `hidden_activation`, `layer_norm_epsilon`, `initializer_range` (as the
            encoder's) and `keras.layers.Layer` arguments.

    Called as `MaskedLMHead` is (sequence output, masked positions → float32 logits
    `[batch, predictions, vocabulary_size]`); consecutive masked positions are one span.

    Example:
    >>> import numpy as np
    >>> embedding = keras.layers.Embedding(30, 4)
    >>> embedding.build((None,))
    >>> span = np.array([[2, 3, 4]])  # three masked tokens between positions 1 and 5
    >>> tuple(SpanBoundaryHead(embedding)(np.ones((1, 8, 4)), span).shape)
    (1, 3, 30)
    """

    def __init__(
        self, token_embedding: keras.layers.Embedding, max_span_offset: int = 32, **kwargs
    ):
        super().__init__(token_embedding, **kwargs)
        self.max_span_offset = max_span_offset
        self.offset_embedding = keras.layers.Embedding(
            max_span_offset,
            token_embedding.output_dim,
            embeddings_initializer=self.initializer(),
            dtype=self.dtype_policy,
            name="offset_embedding",
        )
        self.transforms = [self.transform(f"dense_{i}", f"layer_norm_{i}") for i in range(2)]

    def build(self, sequence_output_shape, masked_positions_shape=None):
        width = self.token_embedding.output_dim
        self.offset_embedding.build((None,))
        input_width = 2 * sequence_output_shape[-1] + width
        for dense, layer_norm in self.transforms:
            dense.build((None, input_width))
            layer_norm.build((None, width))
            input_width = width
        self.build_decoder()
        self.built = True

    def call(self, sequence_output, masked_positions):
        left, right, offset = span_boundaries(masked_positions, ops.shape(sequence_output)[1])
        offset = ops.minimum(offset, self.max_span_offset - 1)
        hidden = ops.concatenate(
            [
                vectors_at(sequence_output, left),
                vectors_at(sequence_output, right),
                ops.cast(self.offset_embedding(offset), sequence_output.dtype),
            ],
            axis=-1,
        )
        for dense, layer_norm in self.transforms:
            hidden = layer_norm(dense(hidden))
        return self.decode(hidden)

    def get_config(self):
        return {**super().get_config(), "max_span_offset": self.max_span_offset}
