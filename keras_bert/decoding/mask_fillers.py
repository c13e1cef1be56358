"""The likeliest tokens at the mask tokens of packed texts, from masked-LM logits, in TensorFlow
ops: `BertMaskedLM.fill_mask` and the export's `MaskedLMServing` compute them alike."""

from __future__ import annotations

from collections.abc import Callable

import tensorflow as tf

from keras_bert.errors import ConfigError
from keras_bert.text.special_tokens import MASK_TOKEN

# The mask tokens of BERT's family: BERT's, ALBERT's and DeBERTa's; RoBERTa's.
MASK_TOKENS = (MASK_TOKEN, "<mask>")


def mask_token_of(tokenizer) -> str:
    """The first of `MASK_TOKENS` that `tokenizer` knows."""
    for token in MASK_TOKENS:
        try:
            tokenizer.token_to_id(token)
        except ValueError:
            continue
        return token
    raise ConfigError(f"The tokenizer has none of the mask tokens {MASK_TOKENS}.")


def mask_fillers(
    inputs: dict[str, tf.Tensor],
    run_model: Callable[[dict[str, tf.Tensor]], dict[str, tf.Tensor]],
    tokenizer,
    mask_id: int,
    top_k: int = 5,
    max_masks: int = 4,
) -> dict[str, tf.Tensor]:
    """The `top_k` likeliest tokens at the first `max_masks` mask ids of each packed input.

    Args:
        inputs: packed int32 `input_word_ids`, `input_mask`, `input_type_ids`
            `[batch, length]`.
        run_model: the model: `inputs` plus `masked_lm_positions` `[batch, max_masks]` →
            `{"masked_lm": logits}` `[batch, max_masks, vocabulary]`.
        tokenizer: the tokenizer (`id_to_token`).
        mask_id: the id of the mask token (`mask_token_of`).
        top_k: fillers per mask.
        max_masks: mask slots per text.

    Returns:
        `top_tokens` string and `top_ids` int32 `[batch, max_masks, top_k]` (padding "" and
        -1), `top_probabilities` float32 (padding 0), `num_masks` int32 `[batch]`.
    """
    word_ids = inputs["input_word_ids"]
    is_mask = tf.equal(word_ids, mask_id)
    all_positions = tf.broadcast_to(tf.range(tf.shape(word_ids)[1]), tf.shape(word_ids))
    mask_positions = tf.ragged.boolean_mask(all_positions, is_mask)
    num_masks = tf.minimum(tf.cast(mask_positions.row_lengths(), tf.int32), max_masks)
    mask_positions = mask_positions.to_tensor(0, shape=[None, max_masks])
    model_inputs = {**inputs, "masked_lm_positions": mask_positions}
    logits = tf.cast(run_model(model_inputs)["masked_lm"], tf.float32)
    probabilities, ids = tf.math.top_k(tf.nn.softmax(logits, axis=-1), k=top_k)
    is_real = (tf.range(max_masks)[tf.newaxis] < num_masks[:, tf.newaxis])[..., None]
    is_real = tf.broadcast_to(is_real, tf.shape(ids))
    return {
        "top_tokens": tf.where(is_real, tokenizer.id_to_token(ids), ""),
        "top_ids": tf.where(is_real, ids, -1),
        "top_probabilities": tf.where(is_real, probabilities, 0.0),
        "num_masks": num_masks,
    }
