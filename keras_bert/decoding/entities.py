"""Entities from BIO tags of a batch of texts, in TensorFlow ops (`text_entities`: the words'
tags, their spans in the text and scores, in one graph), which `BertTokenClassifier.
predict_entities` and the export's `TokenClassifierServing` both compute. The tags are read as
the CoNLL script reads them, as `keras_bert.decoding.bio_tags.bio_spans` reads one sequence in
Python."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import tensorflow as tf

from keras_bert.decoding.bio_tags import parse_bio_tag
from keras_bert.decoding.buckets import length_buckets, trim_to_bucket
from keras_bert.text.offsets import byte_substrings, char_offsets, sanitize_utf8

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


def text_entities(
    text: tf.Tensor,
    preprocessor,
    run_model: Callable[[dict[str, tf.Tensor]], tf.Tensor],
    tag_table: BioTagTable,
    max_entities: int = 32,
    buckets: Sequence[int] | None = None,
) -> dict[str, tf.Tensor]:
    """The entities of a batch of texts, as a token classifier tags their words.

    Words are the tokenizer's (`tokenize_words_with_offsets`); each word takes the label
    predicted at its first word piece, and the BIO labels are read as the CoNLL script reads
    them. Words beyond the first `seq_length - 2` word pieces, and words without text (BPE's
    runs of whitespace), get no label.

    Args:
        text: string `[batch]`.
        preprocessor: the model's preprocessor (its tokenizer, packer and `seq_length`).
        run_model: the model: packed inputs → logits `[batch, length, tags]`.
        tag_table: the model's `BioTagTable`.
        max_entities: the number of entity slots per text.
        buckets: the lengths a batch is cut to (default `length_buckets(seq_length)`).

    Returns:
        Padded to `max_entities` per row, in text order: `entity_labels` and `entity_texts`
        string (padding ""), `entity_starts` and `entity_ends` int32 character offsets
        `[start, end)` (padding -1), `entity_scores` float32 (the mean probability of the words'
        labels; padding 0), and `num_entities` int32 `[batch]` (at most `max_entities`; more
        are dropped).
    """
    buckets = buckets or length_buckets(preprocessor.seq_length)
    text = sanitize_utf8(text)
    pieces, word_starts, word_ends = preprocessor.tokenizer.tokenize_words_with_offsets(text)
    tokens = pieces.merge_dims(1, 2)
    logits = tf.cast(run_model(trim_to_bucket(preprocessor.packer(tokens), buckets)), tf.float32)
    tag_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
    tag_probabilities = tf.reduce_max(tf.nn.softmax(logits, axis=-1), axis=-1)

    # Flat over all words of the batch: row, and first-piece position in the packed input.
    word_rows = tf.cast(pieces.value_rowids(), tf.int32)
    first_piece = pieces.values.row_starts() - tf.gather(tokens.row_starts(), word_rows)
    kept_tokens = tf.minimum(tokens.row_lengths(), preprocessor.seq_length - 2)
    kept = first_piece < tf.gather(kept_tokens, word_rows)
    kept &= word_ends.flat_values > word_starts.flat_values
    word_rows = tf.boolean_mask(word_rows, kept)
    first_piece = tf.cast(tf.boolean_mask(first_piece, kept), tf.int32)
    positions = tf.stack([word_rows, first_piece + 1], axis=1)
    word_tags = tf.gather_nd(tag_ids, positions)
    word_probabilities = tf.gather_nd(tag_probabilities, positions)
    word_starts = tf.boolean_mask(word_starts.flat_values, kept)
    word_ends = tf.boolean_mask(word_ends.flat_values, kept)

    found = bio_entities(word_tags, word_rows, word_probabilities, tag_table)
    entity_rows = found["rows"]
    entity_texts = tf.gather(text, entity_rows)
    byte_starts = tf.gather(word_starts, found["first_words"])
    byte_ends = tf.gather(word_ends, found["last_words"])
    entities = {
        "entity_labels": (tf.gather(tag_table.type_names, found["types"]), ""),
        "entity_texts": (byte_substrings(entity_texts, byte_starts, byte_ends), ""),
        "entity_starts": (char_offsets(entity_texts, byte_starts), -1),
        "entity_ends": (char_offsets(entity_texts, byte_ends), -1),
        "entity_scores": (found["scores"], 0.0),
    }
    row_splits = tf.RaggedTensor.from_value_rowids(
        entity_rows,
        tf.cast(entity_rows, tf.int64),
        nrows=tf.size(text, out_type=tf.int64),
        validate=False,
    ).row_splits
    outputs = {
        name: tf.RaggedTensor.from_row_splits(values, row_splits, validate=False).to_tensor(
            padding, shape=[None, max_entities]
        )
        for name, (values, padding) in entities.items()
    }
    counts = tf.cast(row_splits[1:] - row_splits[:-1], tf.int32)
    outputs["num_entities"] = tf.minimum(counts, max_entities)
    return outputs
