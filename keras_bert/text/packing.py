"""Packing token ids into BERT inputs: `[CLS] A [SEP] (B [SEP])`, segment ids, mask, padding."""

from collections.abc import Sequence

import keras
import tensorflow as tf

from keras_bert.errors import ConfigError

TRUNCATION_STRATEGIES = ("longest_first", "longest_first_hf", "round_robin", "waterfall")


def truncated_lengths(
    lengths_a: tf.Tensor,
    lengths_b: tf.Tensor,
    budget: int | tf.Tensor,
    truncation: str = "longest_first",
) -> tuple[tf.Tensor, tf.Tensor]:
    """How many tokens of segments A and B fit in `budget` tokens, per example.

    Args:
        lengths_a: int tensor `[batch]`, the untruncated lengths of segment A.
        lengths_b: same for segment B.
        budget: the number of tokens A and B may take together.
        truncation: one of
            "longest_first": original BERT's `_truncate_seq_pair`, which removes one token at a
                time from the longer segment, from B on ties. In closed form,
                `a = min(la, max(budget - lb, ceil(budget / 2)))`, `b = min(lb, budget - a)`.
            "longest_first_hf": Hugging Face `tokenizers`' "longest_first", which differs from
                BERT's in one case: when both segments are cut and `budget` is odd, the odd
                token goes to the longer segment (to B on ties) instead of to A.
            "round_robin": gives one token to A, then one to B, and so on, as tensorflow-text's
                `RoundRobinTrimmer`; for two segments this is the same as "longest_first".
            "waterfall": A first, B gets what is left.

    Returns:
        `(truncated_lengths_a, truncated_lengths_b)`, with the dtype of `lengths_a`.
    """
    if truncation not in TRUNCATION_STRATEGIES:
        raise ValueError(f"truncation must be one of {TRUNCATION_STRATEGIES}, got {truncation!r}")
    budget = tf.cast(budget, lengths_a.dtype)
    if truncation == "waterfall":
        kept_a = tf.minimum(lengths_a, budget)
    else:
        half_a = (budget + 1) // 2
        if truncation == "longest_first_hf":
            half_a = tf.where(lengths_a > lengths_b, half_a, budget // 2)
        kept_a = tf.minimum(lengths_a, tf.maximum(budget - lengths_b, half_a))
    return kept_a, tf.minimum(lengths_b, budget - kept_a)


def check_passage_room(
    seq_length: int, pair_separators: int, max_question_length: int, setting: str
) -> None:
    """Raises a `ConfigError` where windows of `seq_length` tokens leave a question cut to
    `max_question_length` pieces (the `setting` that says so) no room for its passage: the pair's
    special tokens are 2 + `pair_separators` (`BertPacker`'s).

    Example:
    >>> check_passage_room(16, 1, 12, "max_query_length")
    >>> check_passage_room(16, 1, 13, "max_query_length")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    keras_bert.errors.ConfigError: seq_length (16) leaves no room for the passage after a ...
    """
    special_tokens = 2 + pair_separators
    if seq_length - max_question_length - special_tokens < 1:
        raise ConfigError(
            f"seq_length ({seq_length}) leaves no room for the passage after a question of up "
            f"to {max_question_length} tokens: use a seq_length above "
            f"{max_question_length + special_tokens}, or a shorter {setting}."
        )


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPacker(keras.layers.Layer):
    """Packs one or two segments of token ids into fixed-length BERT inputs.

    One segment gives `[CLS] A [SEP]`, two give `[CLS] A [SEP] B [SEP]`; `input_type_ids` is 0 on
    `[CLS] A [SEP]` and 1 on `B [SEP]`, `input_mask` is 1 on real tokens, and everything is padded
    with `pad_id` (mask and type 0) to `seq_length`. Segments that do not fit are truncated with
    `truncated_lengths`. Only core TensorFlow ops, so served graphs need no extra kernels.

    The family's other layouts are settings: RoBERTa packs pairs `<s> A </s></s> B </s>` with
    one token type (`pair_separators=2, second_type_id=0`); ALBERT and DeBERTa pack as BERT.

    Args:
        seq_length: the length of the packed inputs; at least 3 (for pairs, 2 more than the
            special tokens).
        cls_id: id of [CLS] (RoBERTa's `<s>`).
        sep_id: id of [SEP] (RoBERTa's `</s>`).
        pad_id: id of [PAD].
        truncation: "longest_first" (original BERT), "longest_first_hf", "round_robin" or
            "waterfall" (see `truncated_lengths`).
        pair_separators: how many [SEP] end segment A of a pair (RoBERTa: 2).
        second_type_id: the `input_type_ids` of segment B and its [SEP] (RoBERTa: 0).
        **kwargs: `keras.layers.Layer` arguments.

    Example:
    >>> import tensorflow as tf
    >>> from keras_bert.text import BertPacker
    >>> packer = BertPacker(seq_length=9, cls_id=101, sep_id=102, pad_id=0)
    >>> a = tf.ragged.constant([[7, 8, 9]], dtype=tf.int32)
    >>> b = tf.ragged.constant([[5, 6]], dtype=tf.int32)
    >>> packed = packer((a, b))
    >>> packed["input_word_ids"].numpy().tolist()
    [[101, 7, 8, 9, 102, 5, 6, 102, 0]]
    >>> packed["input_type_ids"].numpy().tolist()
    [[0, 0, 0, 0, 0, 1, 1, 1, 0]]
    >>> packed["input_mask"].numpy().tolist()
    [[1, 1, 1, 1, 1, 1, 1, 1, 0]]
    """

    def __init__(
        self,
        seq_length: int,
        cls_id: int,
        sep_id: int,
        pad_id: int = 0,
        truncation: str = "longest_first",
        pair_separators: int = 1,
        second_type_id: int = 1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if pair_separators < 1:
            raise ValueError(f"pair_separators must be at least 1, got {pair_separators}")
        if seq_length < 3:
            raise ValueError(f"seq_length must be at least 3 ([CLS] and [SEP]), got {seq_length}")
        if truncation not in TRUNCATION_STRATEGIES:
            raise ValueError(
                f"truncation must be one of {TRUNCATION_STRATEGIES}, got {truncation!r}"
            )
        self.seq_length = seq_length
        self.cls_id = cls_id
        self.sep_id = sep_id
        self.pad_id = pad_id
        self.truncation = truncation
        self.pair_separators = pair_separators
        self.second_type_id = second_type_id
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True

    def call(self, segments: tf.RaggedTensor | Sequence[tf.RaggedTensor]) -> dict[str, tf.Tensor]:
        """Packs ragged int32 ids `[batch, (tokens)]`, or a pair of them, into a dict of
        int32 `[batch, seq_length]` tensors `input_word_ids`, `input_mask`, `input_type_ids`."""
        if isinstance(segments, (tuple, list)):
            segments = list(segments)
        else:
            segments = [segments]
        pair_length = 2 + self.pair_separators  # special tokens of a pair
        if len(segments) == 2 and self.seq_length < pair_length + 2:
            raise ValueError(
                f"seq_length must be at least {pair_length + 2} for pairs, got {self.seq_length}"
            )
        if len(segments) not in (1, 2):
            raise ValueError(f"BertPacker packs 1 or 2 segments, got {len(segments)}")
        lengths = [segment.row_lengths() for segment in segments]
        if len(segments) == 1:
            budget = self.seq_length - 2
            kept = [tf.minimum(lengths[0], budget)]
        else:
            budget = self.seq_length - pair_length
            kept = truncated_lengths(*lengths, budget, self.truncation)
        # Dense ops from here: crop each segment to the budget (RaggedTensorToTensor), then
        # gather every output position from its source ([CLS], A, [SEP], B, [SEP] or padding).
        dense = [segment.to_tensor(self.pad_id, shape=[None, budget]) for segment in segments]
        positions = tf.range(self.seq_length, dtype=tf.int64)
        positions = tf.broadcast_to(positions, [segments[0].nrows(), self.seq_length])
        first_end = kept[0][:, tf.newaxis] + 1  # position of the first [SEP]
        end = first_end  # position of the last [SEP]
        word_ids = tf.where(positions == 0, self.cls_id, self.pad_id)
        word_ids = tf.where(positions == first_end, self.sep_id, word_ids)
        word_ids = self._copy_segment(word_ids, dense[0], positions, 1, first_end)
        second_start = first_end + self.pair_separators  # where segment B starts
        if len(segments) == 2:
            end = second_start + kept[1][:, tf.newaxis]
            separators = (positions >= first_end) & (positions < second_start) | (positions == end)
            word_ids = tf.where(separators, self.sep_id, word_ids)
            word_ids = self._copy_segment(word_ids, dense[1], positions, second_start, end)
        input_mask = tf.cast(positions <= end, tf.int32)
        is_second = tf.cast(positions >= second_start, tf.int32)
        return {
            "input_word_ids": tf.cast(word_ids, tf.int32),
            "input_mask": input_mask,
            "input_type_ids": is_second * self.second_type_id * input_mask,
        }

    @staticmethod
    def _copy_segment(
        word_ids: tf.Tensor,
        segment: tf.Tensor,
        positions: tf.Tensor,
        start: int | tf.Tensor,
        end: tf.Tensor,
    ) -> tf.Tensor:
        """`word_ids` with `segment[:, : end - start]` written to positions `[start, end)`."""
        source = tf.clip_by_value(positions - start, 0, segment.shape[1] - 1)
        values = tf.gather(segment, source, batch_dims=1)
        inside = (positions >= start) & (positions < end)
        return tf.where(inside, tf.cast(values, word_ids.dtype), word_ids)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "seq_length": self.seq_length,
                "cls_id": self.cls_id,
                "sep_id": self.sep_id,
                "pad_id": self.pad_id,
                "truncation": self.truncation,
                "pair_separators": self.pair_separators,
                "second_type_id": self.second_type_id,
            }
        )
        return config
