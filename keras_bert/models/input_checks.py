"""What a model's inputs may hold, checked before they reach it: no id past its embedding
tables, no more tokens than its positions (`BertConfig.check_seq_length`), no wider rows than
them where a token's position is its column (`BertConfig.positions_are_columns`: BERT,
ModernBERT), and no token types for a family that refuses them (ModernBERT: its transformers
model takes none). Each fault is a one-line error of keras_bert's that says what to send
instead."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from keras_bert.config import BertConfig
from keras_bert.errors import ConfigError, DataError, check_ids
from keras_bert.families import family


def check_preprocessor(preprocessor, config: BertConfig) -> None:
    """Raises a `ConfigError` for a preprocessor whose packed rows the model cannot read: longer
    than its positions, or a pair's second segment typed for a family that refuses token types.

    Example:
    >>> from keras_bert import load_preprocessor
    >>> preprocessor = load_preprocessor("../shared/reference/variants/modernbert", seq_length=80)
    >>> check_preprocessor(preprocessor, BertConfig.from_json_file(
    ...     "../shared/reference/variants/modernbert/config.json").replace(
    ...     max_position_embeddings=64))
    Traceback (most recent call last):
    ...
    keras_bert.errors.ConfigError: seq_length 80 is longer than the 64 tokens this modernbert \
model reads: use seq_length 64 or less (longer texts are cut to it).
    """
    config.check_seq_length(preprocessor.seq_length)
    second_type_id = preprocessor.packer.second_type_id
    if family(config.model_type).refuses_token_types and second_type_id:
        raise ConfigError(
            f"The preprocessor types a pair's second text {second_type_id}, and "
            f"{config.model_type} models have no token types: use second_type_id=0 (as "
            "load_preprocessor does)."
        )


def checked_inputs(inputs: Any, config: BertConfig) -> Any:
    """Packed inputs (a dict of arrays or eager tensors) as the model of `config` reads them:
    `input_type_ids` of zeros added where a family without token types gets none; other
    inputs (texts, datasets, symbolic tensors) as they are.

    Raises:
        DataError: an id past the embedding table (ids packed with another checkpoint's
            vocabulary), a token type past the model's, rows longer than the model's
            positions, or token types other than 0 for a family that refuses them
            (`Family.refuses_token_types`).

    Example:
    >>> config = BertConfig(model_type="modernbert", type_vocab_size=0,
    ...                     max_position_embeddings=1024)
    >>> sorted(checked_inputs({"input_word_ids": np.ones((1, 4), "int32"),
    ...                        "input_mask": np.ones((1, 4), "int32")}, config))
    ['input_mask', 'input_type_ids', 'input_word_ids']
    >>> checked_inputs({"input_word_ids": np.ones((1, 4), "int32"),
    ...                 "input_type_ids": np.array([[0, 0, 1, 1]])}, config)
    Traceback (most recent call last):
    ...
    keras_bert.errors.DataError: This modernbert model has no token types: send input_type_ids \
of zeros or leave them out (a pair's second text is marked by the separator before it).
    >>> checked_inputs({"input_word_ids": np.array([[101, 40000, 102]])}, BertConfig())
    Traceback (most recent call last):
    ...
    keras_bert.errors.DataError: input_word_ids: token id 40000 is not one of this bert model's \
30522 token ids (0-30521): pack the texts with its checkpoint's preprocessor (load_preprocessor).
    """
    if not isinstance(inputs, Mapping) or "input_word_ids" not in inputs:
        return inputs
    try:
        word_ids = np.asarray(inputs["input_word_ids"])
    except (TypeError, ValueError, NotImplementedError):  # symbolic tensors: checked in the graph
        return inputs
    if word_ids.dtype.kind not in "iuf":
        return inputs
    check_ids(
        word_ids,
        config.vocab_size,
        "input_word_ids: token id",
        f"this {config.model_type} model's {config.vocab_size} token ids",
        ": pack the texts with its checkpoint's preprocessor (load_preprocessor)",
    )
    if word_ids.ndim == 2 and config.positions_bound_inputs:
        # A token's position is its column (BERT, ModernBERT), or counts the real tokens before
        # it (RoBERTa: padding past them takes none).
        mask = inputs.get("input_mask")
        tokens = (
            word_ids.shape[1]
            if config.positions_are_columns or mask is None
            else int(np.asarray(mask).sum(axis=1).max(initial=0))
        )
        if tokens > config.longest_input:
            held = "ids" if config.positions_are_columns else "tokens"
            raise DataError(
                f"input_word_ids holds {tokens} {held} per row; this {config.model_type} "
                f"model reads at most {config.longest_input}: cut the rows (or pack the texts "
                f"with seq_length={config.longest_input})."
            )
    type_ids = inputs.get("input_type_ids")
    if config.type_vocab_size:
        if type_ids is not None:
            types = config.type_vocab_size
            check_ids(
                type_ids,
                types,
                "input_type_ids: token type",
                f"this {config.model_type} model's {types} token types",
            )
        return inputs
    if type_ids is None:
        return {**inputs, "input_type_ids": np.zeros_like(word_ids)}
    if family(config.model_type).refuses_token_types and np.any(np.asarray(type_ids) != 0):
        raise DataError(
            f"This {config.model_type} model has no token types: send input_type_ids of zeros "
            "or leave them out (a pair's second text is marked by the separator before it)."
        )
    return inputs
