"""The shape of pretraining examples and the last steps of every builder of them: instances →
packed inputs → masked-LM features."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import tensorflow as tf

from keras_bert.data.masking import MaskingConfig, TokenMasker
from keras_bert.errors import ConfigError
from keras_bert.text import BertPacker
from keras_bert.text.special_tokens import CLS_TOKEN, PAD_TOKEN, SEP_TOKEN

FEATURE_NAMES = (
    "input_word_ids",
    "input_mask",
    "input_type_ids",
    "masked_lm_positions",
    "masked_lm_ids",
    "masked_lm_weights",
    "next_sentence_labels",
)
MODEL_INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions")
# ELECTRA's pretrainer also reads what the masks hide: its generator's samples replace it.
REPLACED_TOKEN_INPUT_NAMES = (*MODEL_INPUT_NAMES, "masked_lm_ids", "masked_lm_weights")


@dataclasses.dataclass(frozen=True)
class PretrainingDataConfig:
    """The shape of pretraining examples.

    Args:
        seq_length: packed sequence length.
        next_sentence_prediction: BERT sentence pairs (50% random B) or, if False, contiguous
            full sentences (RoBERTa style; `next_sentence_labels` are then all 0).
        sentence_order_prediction: ALBERT's pairs instead: two consecutive segments, swapped
            half the time (`next_sentence_labels` 1: swapped); needs next_sentence_prediction
            off.
        cross_documents: without pairs, pack sentences across documents with a [SEP] between
            them (RoBERTa's FULL-SENTENCES); if False every document starts a new sequence.
        short_seq_prob: probability of a shorter target length for a document's pairs.
        masking: a `MaskingConfig`.
    """

    seq_length: int = 128
    next_sentence_prediction: bool = True
    sentence_order_prediction: bool = False
    cross_documents: bool = True
    short_seq_prob: float = 0.1
    masking: MaskingConfig = dataclasses.field(default_factory=MaskingConfig)

    def __post_init__(self):
        if self.seq_length < 5:
            raise ConfigError(f"seq_length must be at least 5, got {self.seq_length}.")
        if self.next_sentence_prediction and self.sentence_order_prediction:
            raise ConfigError(
                "Choose next-sentence or sentence-order prediction, not both "
                "(--next-sentence-prediction false --sentence-order-prediction true)."
            )
        if isinstance(self.masking, dict):
            object.__setattr__(self, "masking", MaskingConfig(**self.masking))

    @property
    def sentence_pairs(self) -> bool:
        """Whether examples are sentence pairs (NSP or SOP) rather than single segments."""
        return self.next_sentence_prediction or self.sentence_order_prediction

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def instance_features(
    vocabulary: Sequence[str], config: PretrainingDataConfig
) -> Callable[..., dict[str, tf.Tensor]]:
    """The function from a batch of instances to pretraining features, as every builder of
    examples makes them: `(tokens_a, tokens_b, next_sentence_labels, seed)` (ragged
    `[batch, None]` ids, `[batch]` labels, a stateless seed pair) to the `FEATURE_NAMES`,
    packed with BERT's layout and masked by `TokenMasker` under `seed`.

    Example:
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"]
    >>> features = instance_features(vocabulary, PretrainingDataConfig(seq_length=8))
    >>> batch = features(tf.ragged.constant([[5, 6]]), tf.ragged.constant([[7]]),
    ...                  tf.constant([0]), seed=[0, 0])
    >>> batch["input_type_ids"].numpy().tolist()
    [[0, 0, 0, 0, 1, 1, 0, 0]]
    """
    vocabulary = list(vocabulary)
    packer = BertPacker(
        seq_length=config.seq_length,
        cls_id=vocabulary.index(CLS_TOKEN),
        sep_id=vocabulary.index(SEP_TOKEN),
        pad_id=vocabulary.index(PAD_TOKEN),
    )
    masker = TokenMasker(vocabulary, config.masking)

    def features(tokens_a, tokens_b, next_sentence_labels, seed) -> dict[str, tf.Tensor]:
        packed = packer((tokens_a, tokens_b) if config.sentence_pairs else tokens_a)
        masked = masker(packed["input_word_ids"], packed["input_mask"], seed=seed)
        return {**packed, **masked, "next_sentence_labels": next_sentence_labels}

    return features


def document_separator(vocabulary: Sequence[str], config: PretrainingDataConfig) -> int | None:
    """The token between documents packed together (FULL-SENTENCES), or None (sentence pairs,
    or every document packed alone).

    Example:
    >>> packed = PretrainingDataConfig(next_sentence_prediction=False)
    >>> document_separator(["[PAD]", "[SEP]"], packed)
    1
    >>> print(document_separator([], PretrainingDataConfig()))
    None
    """
    packs_across = config.cross_documents and not config.sentence_pairs
    return list(vocabulary).index(SEP_TOKEN) if packs_across else None


def masked_batches(
    instances: tf.data.Dataset,
    vocabulary: Sequence[str],
    batch_size: int,
    config: PretrainingDataConfig,
    seed: int,
    start_batch: int = 0,
    drop_remainder: bool = True,
    auto_shard_policy: tf.data.experimental.AutoShardPolicy = (
        tf.data.experimental.AutoShardPolicy.AUTO
    ),
) -> tf.data.Dataset:
    """Batches of pretraining features from `(tokens_a, tokens_b, next_sentence_label)`
    instances: packed and masked in `Dataset.map`, masks seeded by `(seed, batch index)`;
    `start_batch` batches are skipped unmasked; `auto_shard_policy` says how a strategy may
    split the batches between workers."""
    features = instance_features(vocabulary, config)

    def pack_and_mask(batch_index, instances):
        return features(*instances, seed=[seed, batch_index])

    dataset = instances.ragged_batch(batch_size, drop_remainder=drop_remainder).enumerate()
    dataset = dataset.skip(start_batch).map(pack_and_mask, num_parallel_calls=tf.data.AUTOTUNE)
    options = tf.data.Options()
    options.deterministic = True
    options.experimental_distribute.auto_shard_policy = auto_shard_policy
    return dataset.with_options(options).prefetch(tf.data.AUTOTUNE)


def split_features(features: dict[str, tf.Tensor]):
    """`(inputs, labels, sample_weights)` for `BertPretrainer.fit` from pretraining features."""
    inputs = {name: features[name] for name in MODEL_INPUT_NAMES}
    labels = {
        "masked_lm": features["masked_lm_ids"],
        "next_sentence": features["next_sentence_labels"],
    }
    sample_weights = {
        "masked_lm": features["masked_lm_weights"],
        "next_sentence": tf.ones_like(features["next_sentence_labels"], tf.float32),
    }
    return inputs, labels, sample_weights


def split_replaced_token_features(features: dict[str, tf.Tensor]):
    """`(inputs, labels, sample_weights)` for `ElectraPretrainer.fit`: the masking goes in
    whole (the generator's draws replace the masked tokens, and the discriminator's labels say
    where they differ from them), the generator's targets and their weights come out.

    Example:
    >>> features = {name: tf.zeros([1, 2], tf.int32) for name in FEATURE_NAMES}
    >>> inputs, labels, weights = split_replaced_token_features(features)
    >>> sorted(inputs) == sorted(REPLACED_TOKEN_INPUT_NAMES), list(labels), list(weights)
    (True, ['masked_lm'], ['masked_lm'])
    """
    inputs = {name: features[name] for name in REPLACED_TOKEN_INPUT_NAMES}
    labels = {"masked_lm": features["masked_lm_ids"]}
    return inputs, labels, {"masked_lm": features["masked_lm_weights"]}
