"""Task decoding as plain TensorFlow functions, for serving signatures: BIO word tags → entity
spans, and start/end logits → the best answer span. Graph ops only (no Python per example), so
they run inside a SavedModel."""

from __future__ import annotations

from collections.abc import Sequence

import tensorflow as tf

from keras_bert.models.entity_decoding import parse_bio_tag

# Stands in for -inf in masked logits: softmax of an all-masked row stays finite.
MASKED_LOGIT = -1e9
# Tag prefixes as integers in `BioTagTable.prefixes`.
OUTSIDE, BEGIN, INSIDE = 0, 1, 2


class BioTagTable:
    """Tag ids → prefix (`OUTSIDE`, `BEGIN`, `INSIDE`) and entity type index, as tensors.

    Args:
        tag_names: the model's BIO labels ("O", "B-x", "I-x"), in id order.

    Example:
    >>> table = BioTagTable(["O", "B-place", "I-place", "B-person"])
    >>> table.prefixes.numpy().tolist(), table.types.numpy().tolist()
    ([0, 1, 2, 1], [-1, 0, 0, 1])
    """

    def __init__(self, tag_names: Sequence[str]):
        prefixes, types, type_names = [], [], []
        for index, tag in enumerate(tag_names):
            prefix, type_name = parse_bio_tag(tag, f"Label {tag!r} (id {index})")
            if type_name and type_name not in type_names:
                type_names.append(type_name)
            prefixes.append("OBI".index(prefix))
            types.append(type_names.index(type_name) if type_name else -1)
        self.prefixes = tf.constant(prefixes, tf.int32)
        self.types = tf.constant(types, tf.int32)
        self.type_names = tf.constant(type_names or [""], tf.string)


def bio_entities(
    word_tags: tf.Tensor, word_rows: tf.Tensor, word_scores: tf.Tensor, table: BioTagTable
) -> dict[str, tf.Tensor]:
    """Entities of a batch's words, read as the CoNLL script reads BIO tags (`I-x` continues
    an entity only right after `B-x` or `I-x` of its row; otherwise it starts one).

    Args:
        word_tags: int32 `[words]`, the tag id of every word of the batch, row after row.
        word_rows: int32 `[words]`, each word's row (non-decreasing).
        word_scores: float32 `[words]`, e.g. the probability of each word's tag.
        table: the model's `BioTagTable`.

    Returns:
        Per entity, in text order: `rows`, `first_words` and `last_words` (indices into the
        words), `types` (index into `table.type_names`) and `scores` (mean over its words).

    Example:
    >>> table = BioTagTable(["O", "B-x", "I-x"])
    >>> entities = bio_entities(
    ...     tf.constant([1, 2, 0, 2, 1]), tf.constant([0, 0, 0, 0, 1]),
    ...     tf.constant([0.9, 0.7, 1.0, 0.5, 0.8]), table)
    >>> entities["first_words"].numpy().tolist(), entities["last_words"].numpy().tolist()
    ([0, 3, 4], [1, 3, 4])
    """
    prefixes = tf.gather(table.prefixes, word_tags)
    types = tf.gather(table.types, word_tags)
    previous_same_row = tf.concat([[False], word_rows[1:] == word_rows[:-1]], axis=0)
    previous_prefix = tf.concat([[OUTSIDE], prefixes[:-1]], axis=0)
    previous_type = tf.concat([[-1], types[:-1]], axis=0)
    in_entity = prefixes != OUTSIDE
    continues = (
        (prefixes == INSIDE)
        & previous_same_row
        & (previous_prefix != OUTSIDE)
        & (previous_type == types)
    )
    starts = in_entity & ~continues
    entity_ids = tf.cumsum(tf.cast(starts, tf.int32)) - 1
    num_entities = tf.reduce_sum(tf.cast(starts, tf.int32))
    first_words = tf.where(starts)[:, 0]
    word_indices = tf.range(tf.shape(prefixes, out_type=tf.int64)[0])
    entity_word_ids = tf.boolean_mask(entity_ids, in_entity)
    last_words = tf.math.unsorted_segment_max(
        tf.boolean_mask(word_indices, in_entity), entity_word_ids, num_entities
    )
    scores = tf.math.unsorted_segment_mean(
        tf.boolean_mask(word_scores, in_entity), entity_word_ids, num_entities
    )
    return {
        "rows": tf.gather(word_rows, first_words),
        "first_words": first_words,
        "last_words": last_words,
        "types": tf.gather(types, first_words),
        "scores": scores,
    }


def best_answer_spans(
    start_logits: tf.Tensor,
    end_logits: tf.Tensor,
    is_context: tf.Tensor,
    max_answer_length: int,
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """The context span that maximises `p_start * p_end` (softmaxes over context tokens), at
    most `max_answer_length` tokens long, per row.

    Args:
        start_logits, end_logits: float32 `[batch, length]`.
        is_context: bool `[batch, length]`, the positions an answer may cover.
        max_answer_length: the longest answer, in tokens.

    Returns:
        `first`, `last` (int32 positions, `[batch]`) and `score` (`p_start * p_end`; 0 for a
        row without context).

    Example:
    >>> starts, ends = tf.constant([[0.0, 3.0, 1.0, 0.0]]), tf.constant([[0.0, 0.0, 0.0, 3.0]])
    >>> context = tf.constant([[False, True, True, True]])
    >>> first, last, score = best_answer_spans(starts, ends, context, max_answer_length=2)
    >>> int(first[0]), int(last[0])  # the span 1..3 would be 3 tokens long
    (2, 3)
    """
    length = tf.shape(start_logits)[1]
    log_probabilities = [
        tf.nn.log_softmax(tf.where(is_context, logits, MASKED_LOGIT), axis=-1)
        for logits in (start_logits, end_logits)
    ]
    span_scores = log_probabilities[0][:, :, tf.newaxis] + log_probabilities[1][:, tf.newaxis]
    allowed = tf.linalg.band_part(
        tf.ones([length, length], tf.bool), 0, tf.minimum(max_answer_length, length) - 1
    )
    allowed = allowed & is_context[:, :, tf.newaxis] & is_context[:, tf.newaxis]
    span_scores = tf.reshape(tf.where(allowed, span_scores, -float("inf")), [-1, length * length])
    best = tf.argmax(span_scores, axis=-1, output_type=tf.int32)
    has_context = tf.reduce_any(is_context, axis=1)
    score = tf.where(has_context, tf.exp(tf.reduce_max(span_scores, axis=-1)), 0.0)
    return best // length, best % length, score
