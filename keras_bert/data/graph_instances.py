"""Pretraining instances as TensorFlow ops over a stream of documents: the library's one builder
of them (training, held-out evaluation, static TFRecords and Beam all call `build_instances`).

The rules are Google's `create_instances_from_document` (the tests hold this module against a
plain-Python reference of them, `tests/data/reference_instances.py`): a document's sentences
are gathered into chunks up to a target length (shorter at `short_seq_prob`), a chunk splits
into A and B at a random sentence, and B is the actual continuation or, half the time, a
random segment of another document (NSP); SOP swaps the two halves instead; without pairs,
full sentences are packed (across documents with a separator: FULL-SENTENCES). Here the walk
over a document is a `tf.while_loop` from chunk to chunk (`searchsorted` finds the sentence at
which each reaches its target), the random segments come from a second, independently
shuffled document stream, packing is a `Dataset.scan`, and randomness is stateless (seeded by
the document's place in the stream), so the same pipeline runs on TPU hosts and in every
worker of a distributed run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import tensorflow as tf

if TYPE_CHECKING:
    from keras_bert.data.pretraining import PretrainingDataConfig


def _seed(seed: int, index: tf.Tensor, stream: int) -> tf.Tensor:
    """A stateless seed for element `index` of a stream of draws (0: a document's pairs,
    1: random segments, 2: truncation of an instance)."""
    return tf.stack([tf.constant(seed * 4 + stream, tf.int64), tf.cast(index, tf.int64)])


def document_chunks(
    sentences: tf.RaggedTensor,
    seed: tf.Tensor,
    seq_length: int,
    short_seq_prob: float,
    sentence_order: bool,
) -> dict[str, tf.Tensor]:
    """The pairs of one document as sentence ranges, walking it as the reference's
    `document_pair_instances`.

    Args:
        sentences: int32 `[sentences, tokens]` ids of the document.
        seed: int64 `[2]` stateless seed.
        seq_length: packed length ([CLS] and two [SEP]s included).
        short_seq_prob: probability of a shorter target length.
        sentence_order: SOP (B always follows A; the coin swaps them) instead of NSP.

    Returns:
        int32 `[pairs]` vectors: `a_start`, `a_stop`, `b_start`, `b_stop` (sentence indices;
        B empty when it is to be random), `label` (the coin) and `target_b_length`.
    """
    max_num_tokens = seq_length - 3
    num_sentences = tf.cast(sentences.nrows(), tf.int32)
    target_seed, chunk_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
    short = tf.random.stateless_uniform([2], target_seed)
    target_length = tf.where(
        short[0] < short_seq_prob,
        2 + tf.cast(tf.floor(short[1] * (max_num_tokens - 1)), tf.int32),
        max_num_tokens,
    )
    splits = tf.cast(sentences.row_splits, tf.int32)
    # One coin and one split point per chunk; a document has at most one chunk per sentence.
    draws = tf.random.stateless_uniform([num_sentences + 1, 2], chunk_seed)

    def body(chunk_start, chunk, pairs):
        # The chunk runs to the first sentence at which it reaches the target (or the end).
        reach = tf.searchsorted(splits, [splits[chunk_start] + target_length], side="left")[0]
        last = tf.minimum(reach - 1, num_sentences - 1)
        coin = tf.cast(draws[chunk, 0] < 0.5, tf.int32)
        # A chunk of one sentence takes the next one too (its coin kept); at the end of the
        # document it is dropped unless a random B can follow it.
        waits = tf.equal(last, chunk_start) & (sentence_order | tf.equal(coin, 0))
        at_end = tf.equal(last, num_sentences - 1)
        last = tf.where(waits & ~at_end, last + 1, last)
        emits = ~(waits & at_end)
        size = last - chunk_start + 1
        split_point = tf.floor(draws[chunk, 1] * tf.cast(size - 1, tf.float32))
        a_length = tf.where(size >= 2, 1 + tf.cast(split_point, tf.int32), 1)
        random_b = tf.equal(coin, 1) & (not sentence_order)
        a_stop = chunk_start + a_length
        pair = tf.stack(
            [
                chunk_start,
                a_stop,
                tf.where(random_b, 0, a_stop),
                tf.where(random_b, 0, last + 1),
                coin,
                target_length - (splits[a_stop] - splits[chunk_start]),
            ]
        )
        pairs = tf.cond(emits, lambda: pairs.write(pairs.size(), pair), lambda: pairs)
        # The sentences after A were not used when B is random: they start the next chunk.
        next_start = tf.where(emits & random_b, a_stop, last + 1)
        return next_start, chunk + 1, pairs

    pairs = tf.TensorArray(tf.int32, size=0, dynamic_size=True, element_shape=[6])
    loop = tf.while_loop(lambda chunk_start, *_: chunk_start < num_sentences, body, (0, 0, pairs))
    pairs = tf.reshape(loop[-1].stack(), [-1, 6])
    names = ("a_start", "a_stop", "b_start", "b_stop", "label", "target_b_length")
    return dict(zip(names, tf.unstack(pairs, num=6, axis=1), strict=True))


def _sentence_range_tokens(sentences: tf.RaggedTensor, starts, stops) -> tf.RaggedTensor:
    """The tokens of sentences `[start, stop)` for each range, `[ranges, None]`."""
    splits = tf.cast(sentences.row_splits, tf.int32)
    positions = tf.ragged.range(tf.gather(splits, starts), tf.gather(splits, stops))
    return tf.gather(sentences.flat_values, positions)


def document_pairs(
    document_id, sentences, seed, seq_length: int, short_seq_prob: float, sentence_order: bool
) -> tf.data.Dataset:
    """The pairs of one document: `(tokens_a, actual_b, label, target_b_length, document_id)`."""
    chunks = document_chunks(sentences, seed, seq_length, short_seq_prob, sentence_order)
    tokens_a = _sentence_range_tokens(sentences, chunks["a_start"], chunks["a_stop"])
    actual_b = _sentence_range_tokens(sentences, chunks["b_start"], chunks["b_stop"])
    return tf.data.Dataset.from_tensor_slices(
        (
            tokens_a,
            actual_b,
            chunks["label"],
            chunks["target_b_length"],
            tf.fill(tf.shape(chunks["label"]), document_id),
        )
    )


def random_segments(
    document_id, sentences, seed, max_num_tokens: int, count: int
) -> tf.data.Dataset:
    """`count` random B candidates of one document: each from a random sentence to the end or
    until `max_num_tokens` tokens, as `(document_id, [sentences, tokens])`; a pair cuts one to
    its target length as the reference does."""
    num_sentences = tf.cast(sentences.nrows(), tf.int32)
    starts = tf.minimum(
        tf.cast(
            tf.floor(
                tf.random.stateless_uniform([count], seed) * tf.cast(num_sentences, tf.float32)
            ),
            tf.int32,
        ),
        num_sentences - 1,
    )
    splits = tf.cast(sentences.row_splits, tf.int32)
    # The first sentence whose end reaches max_num_tokens, counted from the start.
    last = tf.searchsorted(splits, tf.gather(splits, starts) + max_num_tokens, side="left")
    stops = tf.minimum(last, num_sentences)
    segments = tf.gather(sentences, tf.ragged.range(starts, stops))
    return tf.data.Dataset.from_tensor_slices((tf.fill([count], document_id), segments))


def _cut_to_target(segment: tf.RaggedTensor, target_length) -> tf.Tensor:
    """The shortest run of the segment's first sentences that reaches `target_length` tokens
    (all of them if none does; at least one)."""
    ends = tf.cumsum(tf.cast(segment.row_lengths(), tf.int32))
    last = tf.minimum(tf.searchsorted(ends, [target_length], side="left")[0], tf.size(ends) - 1)
    return segment.flat_values[: ends[last]]


def truncate_pair(tokens_a, tokens_b, max_num_tokens: int, seed) -> tuple[tf.Tensor, tf.Tensor]:
    """The reference's `truncate_pair` in closed form: the longer segment loses a token until the
    pair fits, each from its front or its back with equal odds."""
    length_a, length_b = tf.size(tokens_a), tf.size(tokens_b)
    excess = tf.maximum(length_a + length_b - max_num_tokens, 0)
    # The longer segment (B on a tie) shrinks until the two are level, then they alternate,
    # B first.
    gap = tf.minimum(tf.abs(length_a - length_b), excess)
    rest = excess - gap
    from_a = tf.where(length_a > length_b, gap, 0) + rest // 2
    from_b = excess - from_a
    fronts = tf.random.stateless_uniform([2, max_num_tokens + 3], seed) < 0.5
    front_a = tf.reduce_sum(tf.cast(fronts[0, :from_a], tf.int32))
    front_b = tf.reduce_sum(tf.cast(fronts[1, :from_b], tf.int32))
    return (
        tokens_a[front_a : length_a - (from_a - front_a)],
        tokens_b[front_b : length_b - (from_b - front_b)],
    )


def pair_instances(
    documents: tf.data.Dataset,
    random_documents: tf.data.Dataset | None,
    seq_length: int,
    seed: int,
    short_seq_prob: float = 0.1,
    sentence_order: bool = False,
    segments_per_document: int = 16,
    segment_shuffle_buffer: int = 4096,
) -> tf.data.Dataset:
    """NSP (or SOP) instances of a document stream, as `(tokens_a, tokens_b, label)`.

    Args:
        documents: `(document_id, sentences)` (see `document_stream`).
        random_documents: a second, independently shuffled stream of the same corpus, repeated;
            each of its documents gives `segments_per_document` random B candidates (so every
            document is equally likely, as in the reference), mixed in a shuffle buffer; None
            for SOP, which draws none.
        seq_length: packed sequence length.
        seed: the seed of chunking, coins, split points, truncation.
        short_seq_prob: probability of a shorter target length for a document.
        sentence_order: SOP instead of NSP (no random segments are drawn).
        segments_per_document: random B candidates per document of `random_documents`.
        segment_shuffle_buffer: candidates held for shuffling.
    """
    max_num_tokens = seq_length - 3
    pairs = documents.enumerate().interleave(
        lambda index, document: document_pairs(
            document[0],
            document[1],
            _seed(seed, index, 0),
            seq_length,
            short_seq_prob,
            sentence_order,
        ),
        cycle_length=tf.data.AUTOTUNE,
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    if sentence_order:
        pairs = pairs.enumerate().map(
            lambda index, pair: _sentence_order_instance(index, pair, max_num_tokens, seed),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
        return pairs.filter(_non_empty)
    segments = random_documents.enumerate().interleave(
        lambda index, document: random_segments(
            document[0], document[1], _seed(seed, index, 1), max_num_tokens, segments_per_document
        ),
        cycle_length=tf.data.AUTOTUNE,
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    # Two candidates per pair: the second is taken when the first is of A's own document.
    segments = segments.shuffle(segment_shuffle_buffer, seed=seed, reshuffle_each_iteration=False)
    segments = segments.ragged_batch(2)
    instances = tf.data.Dataset.zip(pairs.enumerate(), segments).map(
        lambda numbered, candidates: _next_sentence_instance(
            numbered, candidates, max_num_tokens, seed
        ),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    return instances.filter(_non_empty)


def _non_empty(tokens_a, tokens_b, label) -> tf.Tensor:
    return (tf.size(tokens_a) > 0) & (tf.size(tokens_b) > 0)


def _next_sentence_instance(numbered, candidates, max_num_tokens: int, seed: int):
    index, (tokens_a, actual_b, label, target_b_length, document_id) = numbered
    candidate_ids, candidate_segments = candidates
    other = tf.cast(tf.equal(candidate_ids[0], document_id), tf.int32)
    random_b = _cut_to_target(candidate_segments[other], target_b_length)
    tokens_b = tf.cond(tf.equal(label, 1), lambda: random_b, lambda: actual_b)
    tokens_a, tokens_b = truncate_pair(tokens_a, tokens_b, max_num_tokens, _seed(seed, index, 2))
    return tokens_a, tokens_b, label


def _sentence_order_instance(index, pair, max_num_tokens: int, seed: int):
    tokens_a, tokens_b, label, _, _ = pair
    tokens_a, tokens_b = truncate_pair(tokens_a, tokens_b, max_num_tokens, _seed(seed, index, 2))
    swapped = tf.equal(label, 1)
    first = tf.cond(swapped, lambda: tokens_b, lambda: tokens_a)
    second = tf.cond(swapped, lambda: tokens_a, lambda: tokens_b)
    return first, second, label


def packed_instances(
    documents: tf.data.Dataset, seq_length: int, document_separator: int | None
) -> tf.data.Dataset:
    """Full sentences packed up to `seq_length - 2` tokens, as the reference's
    `contiguous_instances`
    (across documents with `document_separator` between them: FULL-SENTENCES; a new sequence
    per document without: DOC-SENTENCES), as `(tokens, empty, 0)`; a `scan` over sentences
    holds the sequence being filled."""
    max_num_tokens = seq_length - 2
    across = document_separator is not None
    separator = tf.constant([document_separator if across else 0], tf.int32)

    def sentences_of(document_id, sentences):
        return tf.data.Dataset.range(sentences.nrows()).map(
            lambda index: (sentences[index], tf.equal(index, 0), tf.constant(False))
        )

    # An empty last sentence flushes the sequence of a finite stream.
    end = tf.data.Dataset.from_tensors(
        (tf.zeros([0], tf.int32), tf.constant(True), tf.constant(True))
    )
    sentences = documents.flat_map(sentences_of).concatenate(end)

    def add_sentence(chunk, sentence):
        tokens, starts_document, is_end = sentence
        size = tf.size(chunk)
        closes_document = starts_document & (size > 0)
        flush = is_end | (closes_document & ((not across) | (size + 1 >= max_num_tokens)))
        chunk_before = chunk
        chunk = tf.cond(
            flush,
            lambda: chunk[:0],
            lambda: tf.cond(
                closes_document, lambda: tf.concat([chunk, separator], 0), lambda: chunk
            ),
        )
        overflows = (tf.size(chunk) > 0) & (tf.size(chunk) + tf.size(tokens) > max_num_tokens)
        emitted = tf.cond(flush, lambda: chunk_before, lambda: chunk)
        chunk = tf.cond(overflows, lambda: chunk[:0], lambda: chunk)
        chunk = tf.concat([chunk, tokens[: max_num_tokens - tf.size(chunk)]], 0)
        emits = (flush & (tf.size(chunk_before) > 0)) | overflows
        return chunk, (emits, emitted)

    packed = sentences.scan(tf.zeros([0], tf.int32), add_sentence)
    return packed.filter(lambda emits, _: emits).map(
        lambda _, tokens: (tokens, tokens[:0], tf.constant(0, tf.int32))
    )


def build_instances(
    documents: tf.data.Dataset,
    random_documents: Callable[[], tf.data.Dataset],
    config: PretrainingDataConfig,
    seed: int,
    document_separator: int | None = None,
    segments_per_document: int = 16,
    segment_shuffle_buffer: int = 4096,
) -> tf.data.Dataset:
    """The instances `config` asks for, as `(tokens_a, tokens_b, next_sentence_label)`: NSP or
    SOP pairs (`pair_instances`), or full sentences packed (`packed_instances`).

    Args:
        documents: `(document_id, sentences)` (see `document_stream`).
        random_documents: makes the second stream of random B candidates (called for NSP only).
        config: a `PretrainingDataConfig` (pairs or packing, `seq_length`, `short_seq_prob`).
        seed: the seed of chunking, coins, split points, truncation.
        document_separator: without pairs, the token between documents packed together
            (FULL-SENTENCES); None starts every document afresh.
        segments_per_document, segment_shuffle_buffer: see `pair_instances`.

    Example:
    >>> from keras_bert.data import PretrainingDataConfig
    >>> sentences = tf.ragged.constant([[[5, 6], [7]], [[8, 9]]])
    >>> documents = tf.data.Dataset.from_tensor_slices((tf.range(2, dtype=tf.int64), sentences))
    >>> config = PretrainingDataConfig(seq_length=8, next_sentence_prediction=False)
    >>> packed = build_instances(documents, None, config, seed=0, document_separator=3)
    >>> [(a.tolist(), b.tolist(), int(label)) for a, b, label in packed.as_numpy_iterator()]
    [([5, 6, 7, 3, 8, 9], [], 0)]
    """
    if not config.sentence_pairs:
        return packed_instances(documents, config.seq_length, document_separator)
    return pair_instances(
        documents,
        random_documents() if config.next_sentence_prediction else None,
        config.seq_length,
        seed,
        short_seq_prob=config.short_seq_prob,
        sentence_order=config.sentence_order_prediction,
        segments_per_document=segments_per_document,
        segment_shuffle_buffer=segment_shuffle_buffer,
    )
