"""Masked-LM masking in TensorFlow ops: which tokens to predict and what the model sees there."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_bert.errors import ConfigError
from keras_bert.text.special_tokens import CLS_TOKEN, MASK_TOKEN, PAD_TOKEN, SEP_TOKEN, UNK_TOKEN


@dataclasses.dataclass(frozen=True)
class MaskingConfig:
    """How tokens are chosen for masked-LM prediction, as in the original BERT.

    Args:
        masked_lm_prob: share of a sequence's real tokens to predict (special tokens and padding
            are never chosen); at least one per sequence.
        max_predictions_per_seq: at most this many predictions per sequence (the length of
            `masked_lm_positions`).
        mask_token_rate: share of chosen tokens replaced by [MASK].
        random_token_rate: share of chosen tokens replaced by a random token; the rest stay.
        whole_word_masking: choose whole words: a "##" piece is masked with its word.
        span_masking: SpanBERT's spans instead of single tokens: contiguous runs of whole words
            whose lengths follow a geometric distribution (`span_length_p`, at most
            `max_span_length` words), until the budget is spent; a span is replaced as one
            ([MASK] everywhere, random tokens everywhere, or kept).
        span_length_p: the geometric distribution's parameter (SpanBERT: 0.2, mean 3.8 words).
        max_span_length: the longest span, in words (SpanBERT: 10).
    """

    masked_lm_prob: float = 0.15
    max_predictions_per_seq: int = 20
    mask_token_rate: float = 0.8
    random_token_rate: float = 0.1
    whole_word_masking: bool = False
    span_masking: bool = False
    span_length_p: float = 0.2
    max_span_length: int = 10

    def __post_init__(self):
        if not 0.0 < self.masked_lm_prob < 1.0:
            raise ConfigError(f"masked_lm_prob must be in (0, 1), got {self.masked_lm_prob}.")
        if self.max_predictions_per_seq < 1:
            raise ConfigError("max_predictions_per_seq must be positive.")
        if self.mask_token_rate < 0 or self.random_token_rate < 0:
            raise ConfigError("mask_token_rate and random_token_rate must not be negative.")
        if self.mask_token_rate + self.random_token_rate > 1.0:
            raise ConfigError("mask_token_rate + random_token_rate must be at most 1.")
        if not 0.0 < self.span_length_p <= 1.0 or self.max_span_length < 1:
            raise ConfigError("span_length_p must be in (0, 1] and max_span_length positive.")


class TokenMasker:
    """Chooses and replaces masked-LM tokens of packed `[batch, seq]` inputs, in graph.

    Randomness is stateless: the same `seed` tensor gives the same masks, so a `tf.data`
    pipeline that derives seeds from its element index is deterministic and makes new masks for
    every pass (dynamic masking).

    Args:
        vocabulary: the WordPiece tokens (id = index).
        config: a `MaskingConfig`.

    Example:
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(20)]
    >>> masker = TokenMasker(vocabulary, MaskingConfig(max_predictions_per_seq=3))
    >>> word_ids = tf.constant([[2, 5, 6, 7, 8, 9, 10, 3, 0, 0]])
    >>> features = masker(word_ids, tf.cast(word_ids > 0, tf.int32), seed=tf.constant([1, 2]))
    >>> features["masked_lm_positions"].shape, int(tf.reduce_sum(features["masked_lm_weights"]))
    (TensorShape([1, 3]), 1)
    """

    def __init__(self, vocabulary: Sequence[str], config: MaskingConfig | None = None):
        self.config = config or MaskingConfig()
        index = {token: position for position, token in enumerate(vocabulary)}
        missing = [
            token for token in (CLS_TOKEN, SEP_TOKEN, PAD_TOKEN, MASK_TOKEN) if token not in index
        ]
        if missing:
            raise ConfigError(f"The vocabulary lacks {', '.join(missing)}, needed for masking.")
        self.mask_id = index[MASK_TOKEN]
        special = {
            index[token]
            for token in (PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN)
            if token in index
        }
        # Tokens in brackets ([unused0], [CLS], ...) are never predicted nor used as random
        # replacements: they do not occur in text.
        special |= {
            i for i, token in enumerate(vocabulary) if token.startswith("[") and token.endswith("]")
        }
        is_special = np.zeros(len(vocabulary), bool)
        is_special[sorted(special)] = True
        self._is_special = tf.constant(is_special)
        self._replacement_ids = tf.constant(np.flatnonzero(~is_special).astype(np.int32))
        self._is_continuation = tf.constant(
            np.array([token.startswith("##") for token in vocabulary], bool)
        )

    def __call__(
        self, word_ids: tf.Tensor, input_mask: tf.Tensor, seed: tf.Tensor
    ) -> dict[str, tf.Tensor]:
        """Masks a batch.

        Args:
            word_ids: int32 `[batch, seq]` packed ids.
            input_mask: int32 `[batch, seq]`, 1 on real tokens.
            seed: int `[2]` stateless seed.

        Returns:
            `input_word_ids` (with replacements), `masked_lm_positions`, `masked_lm_ids` (the
            original ids there), `masked_lm_weights` (1.0 for real predictions, 0.0 for padding);
            the last three `[batch, max_predictions_per_seq]`, positions in increasing order.
        """
        config = self.config
        word_ids = tf.convert_to_tensor(word_ids, tf.int32)
        choice_seed, action_seed, random_token_seed = tf.unstack(
            tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 3)
        )
        shape = tf.shape(word_ids)
        sequence_length = shape[1]
        candidate = tf.logical_and(
            tf.cast(input_mask, tf.bool), ~tf.gather(self._is_special, word_ids)
        )
        num_candidates = tf.reduce_sum(tf.cast(candidate, tf.int32), axis=1)
        num_to_predict = tf.cast(
            tf.round(tf.cast(num_candidates, tf.float32) * config.masked_lm_prob), tf.int32
        )
        num_to_predict = tf.minimum(
            tf.clip_by_value(num_to_predict, 1, config.max_predictions_per_seq), num_candidates
        )

        if config.span_masking:
            chosen, span_ids = self._choose_spans(word_ids, candidate, num_to_predict, choice_seed)
        else:
            chosen = self._choose_tokens(word_ids, candidate, num_to_predict, choice_seed)
            span_ids = tf.broadcast_to(tf.range(sequence_length)[tf.newaxis], shape)

        # 80% [MASK], 10% a random token, 10% unchanged: one decision per span (per token
        # without span masking).
        action = tf.gather(tf.random.stateless_uniform(shape, action_seed), span_ids, batch_dims=1)
        random_ids = tf.gather(
            self._replacement_ids,
            tf.random.stateless_uniform(
                shape, random_token_seed, maxval=tf.size(self._replacement_ids), dtype=tf.int32
            ),
        )
        replaced = tf.where(
            action < config.mask_token_rate,
            self.mask_id,
            tf.where(
                action < config.mask_token_rate + config.random_token_rate, random_ids, word_ids
            ),
        )
        masked_word_ids = tf.where(chosen, replaced, word_ids)

        # Chosen positions in increasing order, padded with position 0 and weight 0.
        positions = tf.where(chosen, tf.range(sequence_length)[tf.newaxis], sequence_length)
        positions = tf.sort(positions, axis=1)
        padding = tf.fill([shape[0], config.max_predictions_per_seq], sequence_length)
        positions = tf.concat([positions, padding], axis=1)[:, : config.max_predictions_per_seq]
        is_prediction = positions < sequence_length
        positions = tf.where(is_prediction, positions, 0)
        masked_ids = tf.where(is_prediction, tf.gather(word_ids, positions, batch_dims=1), 0)
        return {
            "input_word_ids": masked_word_ids,
            "masked_lm_positions": positions,
            "masked_lm_ids": masked_ids,
            "masked_lm_weights": tf.cast(is_prediction, tf.float32),
        }

    def _word_index(self, word_ids: tf.Tensor, candidate: tf.Tensor) -> tf.Tensor:
        """The index of each token's word in its sequence ("##" pieces join the word before)."""
        starts_word = ~(tf.gather(self._is_continuation, word_ids) & candidate)
        return tf.cumsum(tf.cast(starts_word, tf.int32), axis=1) - 1

    def _choose_tokens(self, word_ids, candidate, num_to_predict, seed) -> tf.Tensor:
        """BERT's choice: `num_to_predict` random candidates (whole words with whole-word
        masking)."""
        config = self.config
        shape = tf.shape(word_ids)
        sequence_length = shape[1]
        # A random score per token (per word with whole-word masking); the lowest scores are
        # chosen. A stable sort keeps a word's pieces together even if two scores tie.
        scores = tf.random.stateless_uniform(shape, seed)
        if config.whole_word_masking:
            word_index = self._word_index(word_ids, candidate)
            scores = tf.gather(scores, word_index, batch_dims=1)
        scores = tf.where(candidate, scores, 2.0)
        order = tf.argsort(scores, axis=1, stable=True)
        chosen_count = tf.cumsum(tf.cast(tf.gather(candidate, order, batch_dims=1), tf.int32), 1)
        if config.whole_word_masking:
            # A word is chosen if all its pieces fit: the count at its last piece is compared.
            # (The original skips a word that does not fit and tries the next ones; here the
            # choice stops at the first word that does not fit.)
            sorted_word = tf.gather(word_index, order, batch_dims=1)
            flat_word = sorted_word + sequence_length * tf.range(shape[0])[:, tf.newaxis]
            word_end_count = tf.math.unsorted_segment_max(
                tf.reshape(chosen_count, [-1]),
                tf.reshape(flat_word, [-1]),
                num_segments=shape[0] * sequence_length,
            )
            chosen_count = tf.reshape(tf.gather(word_end_count, flat_word), shape)
        chosen_sorted = chosen_count <= num_to_predict[:, tf.newaxis]
        chosen = tf.gather(chosen_sorted, tf.argsort(order, axis=1), batch_dims=1)
        chosen = tf.logical_and(chosen, candidate)
        return tf.logical_and(chosen, candidate)

    def _choose_spans(self, word_ids, candidate, num_to_predict, seed):
        """SpanBERT's choice: spans of whole words, lengths from a truncated geometric
        distribution, starts at random words; a span that would overrun the budget is skipped.
        Returns the chosen positions and, per token, the index of its span (the position of
        the span's first token), so that a span is replaced as one."""
        config = self.config
        shape = tf.shape(word_ids)
        word_index = self._word_index(word_ids, candidate)
        num_words = tf.reduce_max(tf.where(candidate, word_index, -1), axis=1) + 1
        # At most one span per prediction is tried (every span has a token or more).
        tries = config.max_predictions_per_seq
        length_seed, start_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
        # Inverse CDF of the geometric distribution truncated to 1 ... max_span_length.
        truncation = 1.0 - (1.0 - config.span_length_p) ** config.max_span_length
        uniform = tf.random.stateless_uniform([shape[0], tries], length_seed) * truncation
        if config.span_length_p < 1.0:
            lengths = 1 + tf.cast(
                tf.floor(tf.math.log1p(-uniform) / np.log1p(-config.span_length_p)), tf.int32
            )
        else:
            lengths = tf.ones([shape[0], tries], tf.int32)
        lengths = tf.minimum(lengths, config.max_span_length)
        starts = tf.cast(
            tf.floor(
                tf.random.stateless_uniform([shape[0], tries], start_seed)
                * tf.cast(num_words[:, tf.newaxis], tf.float32)
            ),
            tf.int32,
        )
        chosen = tf.zeros(shape, tf.bool)
        span_ids = tf.broadcast_to(tf.range(shape[1])[tf.newaxis], shape)
        count = tf.zeros([shape[0]], tf.int32)
        for attempt in range(tries):
            start, end = (
                starts[:, attempt : attempt + 1],
                (starts + lengths)[:, attempt : attempt + 1],
            )
            in_span = candidate & (word_index >= start) & (word_index < end)
            new = in_span & ~chosen
            new_count = count + tf.reduce_sum(tf.cast(new, tf.int32), axis=1)
            accepted = (new_count <= num_to_predict) & tf.reduce_any(new, axis=1)
            taken = new & accepted[:, tf.newaxis]
            first_position = tf.argmax(tf.cast(taken, tf.int32), axis=1, output_type=tf.int32)
            span_ids = tf.where(taken, first_position[:, tf.newaxis], span_ids)
            chosen |= taken
            count = tf.where(accepted, new_count, count)
        return chosen, span_ids
