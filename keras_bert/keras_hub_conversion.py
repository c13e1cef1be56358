"""`from_keras_hub`: a keras-hub BERT or XLM-RoBERTa model as a keras_bert model and its
preprocessor."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import keras

from keras_bert.checkpoints.checkpoint import CheckpointError
from keras_bert.checkpoints.keras_hub import (
    keras_hub_activation,
    keras_hub_class,
    load_keras_hub_model,
    read_keras_hub_model,
)
from keras_bert.checkpoints.variables import restore_encoder_weights, restore_variables
from keras_bert.families import family
from keras_bert.models import BertClassifier, BertEncoder
from keras_bert.models.masked_lm import MASKED_LM_SCOPE, BertMaskedLM, masked_lm_head_variables
from keras_bert.text.preprocessor import BertPreprocessor, TextPreprocessor
from keras_bert.text.special_tokens import UNK_TOKEN
from keras_bert.text.unigram_tokenizer import UnigramTokenizer
from keras_bert.text.vocabulary import infer_lowercase, load_vocabulary

logger = logging.getLogger(__name__)

# keras-hub's packers truncate pairs round robin unless told otherwise.
KERAS_HUB_TRUNCATION = "round_robin"
DEFAULT_SEQ_LENGTH = 128
# keras-hub `WordPieceTokenizer` settings that keras_bert's tokenizer has fixed.
_BERT_TOKENIZER_SETTINGS = {"split": True, "suffix_indicator": "##", "oov_token": UNK_TOKEN}
# Classifier output activations after which our logits (the values before it) serve the same
# probabilities: keras-hub's default (none) and softmax.
_CLASSIFIER_ACTIVATIONS = ("linear", "softmax")


class KerasHubConversion(NamedTuple):
    """A converted keras-hub model: `model, preprocessor = from_keras_hub(...)`."""

    model: keras.Model
    preprocessor: TextPreprocessor | None


def from_keras_hub(
    model_or_path: Any,
    vocabulary_file: str | os.PathLike | None = None,
    seq_length: int | None = None,
    lowercase: bool | None = None,
    label_names: Sequence[str] | None = None,
) -> KerasHubConversion:
    """Converts a keras-hub BERT or XLM-RoBERTa model into the keras_bert model that computes
    the same.

    `BertBackbone` → `BertEncoder`, `BertTextClassifier` → `BertClassifier` (logits: the values
    before keras-hub's output activation, which may be none or softmax), `BertMaskedLM` →
    `BertMaskedLM` (its head keeps keras-hub's exact GELU and LayerNorm epsilon 1e-5). The
    encoder computes GELU with the tanh approximation, as keras-hub's `BertBackbone` does. Every
    weight is copied and checked name by name and shape by shape. `XLMRobertaBackbone`,
    `XLMRobertaTextClassifier` and `XLMRobertaMaskedLM` become the same classes of the
    `xlm-roberta` family, in transformers' layout (`keras_bert.checkpoints.keras_hub`), with a
    `TextPreprocessor` of the keras-hub tokenizer's SentencePiece model, whose ids are
    transformers' (keras-hub's tokenizer normalizes some text otherwise).

    The `BertPreprocessor` takes the vocabulary, lower casing, sequence length and pair
    truncation of the keras-hub model's preprocessor when it was saved with one, else the
    vocabulary of `vocabulary_file`; it is `None` when there is neither. Its ids are BERT's,
    which differ from keras-hub's tokenizer on some text: keras-hub's uncased tokenizer keeps
    accents (`strip_accents=False`), case-folds instead of lowercasing and keeps control
    characters; BERT's uncased normalisation, which the vocabulary was built with, strips them.

    Args:
        model_or_path: a keras-hub `BertBackbone`, `BertTextClassifier` or `BertMaskedLM`, or
            the path of a `.keras` file of one.
        vocabulary_file: a `vocab.txt` (XLM-RoBERTa: `sentencepiece.bpe.model`) for models
            saved without a preprocessor (it wins over the saved preprocessor's vocabulary when
            both are there).
        seq_length: length of the packed inputs (default: the keras-hub preprocessor's, else
            128).
        lowercase: uncased normalisation (default: the keras-hub tokenizer's; for a
            `vocabulary_file`, whether its tokens are lower case).
        label_names: class names of a classifier, carried into exports.

    Returns:
        `(model, preprocessor)`.

    Example:
    >>> import keras_hub
    >>> backbone = keras_hub.models.BertBackbone(
    ...     vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32)
    >>> encoder, preprocessor = from_keras_hub(backbone)
    >>> type(encoder).__name__, encoder.bert_config.hidden_activation, preprocessor
    ('BertEncoder', 'gelu_approximate', None)
    """
    source = (
        str(model_or_path)
        if isinstance(model_or_path, (str, Path))
        else f"keras-hub {type(model_or_path).__name__} {getattr(model_or_path, 'name', '')!r}"
    )
    hub_model = load_keras_hub_model(model_or_path)
    kind = keras_hub_class(hub_model)
    checkpoint = read_keras_hub_model(hub_model, source)
    encoder = BertEncoder(checkpoint.config, name="encoder")
    restore_encoder_weights(encoder, checkpoint)

    if kind.role == "classifier":
        activation = keras.activations.serialize(hub_model.activation)
        if activation not in _CLASSIFIER_ACTIVATIONS:
            raise CheckpointError(
                f"{source}: output activation {activation!r} is not supported; supported: "
                f"{', '.join(_CLASSIFIER_ACTIVATIONS)}."
            )
        model = BertClassifier(
            encoder, hub_model.num_classes, label_names, dropout_rate=hub_model.dropout
        )
        model.restore_head(checkpoint)
    elif kind.role == "masked_lm":
        hub_head = hub_model.masked_lm_head
        model = BertMaskedLM(
            encoder,
            head_activation=keras_hub_activation(hub_head.intermediate_activation),
            head_layer_norm_epsilon=hub_head.layer_norm_epsilon,
        )
        head_variables = masked_lm_head_variables(model.masked_lm_head)
        restore_variables(head_variables, checkpoint, scope=MASKED_LM_SCOPE)
    else:
        model = encoder
    if kind.model_type == "bert":
        preprocessor = keras_hub_preprocessor(
            hub_model, checkpoint.config.vocab_size, vocabulary_file, seq_length, lowercase
        )
    else:
        preprocessor = keras_hub_sentencepiece_preprocessor(
            hub_model, kind.model_type, checkpoint.config.vocab_size, vocabulary_file, seq_length
        )
    return KerasHubConversion(model, preprocessor)


def _check_vocabulary_size(tokens: int, vocabulary_size: int) -> None:
    if tokens > vocabulary_size:
        raise CheckpointError(
            f"The vocabulary has {tokens} tokens but the model embeds only {vocabulary_size} "
            "ids: give the vocabulary the model was trained with."
        )


def keras_hub_sentencepiece_preprocessor(
    hub_model: Any,
    model_type: str,
    vocabulary_size: int,
    model_file: str | os.PathLike | None = None,
    seq_length: int | None = None,
) -> TextPreprocessor | None:
    """The `TextPreprocessor` of a keras-hub XLM-RoBERTa model: its SentencePiece model (the
    saved preprocessor's, or `model_file`'s), as transformers' tokenizer reads it, packed as the
    family does; `None` when there is neither."""
    hub_preprocessor = getattr(hub_model, "preprocessor", None)
    truncation = KERAS_HUB_TRUNCATION
    proto = model_file
    if hub_preprocessor is not None:
        proto = model_file or hub_preprocessor.tokenizer.proto
        seq_length = seq_length or hub_preprocessor.sequence_length
        truncation = hub_preprocessor.truncate
    if proto is None:
        logger.info("No keras-hub preprocessor and no vocabulary_file: no preprocessor.")
        return None
    record = family(model_type)
    tokenizer = UnigramTokenizer(
        proto, special_tokens=record.tokenizer.special_tokens, name="tokenizer"
    )
    _check_vocabulary_size(tokenizer.vocabulary_size, vocabulary_size)
    return TextPreprocessor(
        tokenizer,
        seq_length=seq_length or DEFAULT_SEQ_LENGTH,
        truncation=truncation,
        **dataclasses.asdict(record.packing),
    )


def keras_hub_preprocessor(
    hub_model: Any,
    vocabulary_size: int,
    vocabulary_file: str | os.PathLike | None = None,
    seq_length: int | None = None,
    lowercase: bool | None = None,
) -> BertPreprocessor | None:
    """The `BertPreprocessor` of a keras-hub model (see `from_keras_hub`), or `None`."""
    hub_preprocessor = getattr(hub_model, "preprocessor", None)
    truncation = KERAS_HUB_TRUNCATION
    vocabulary = None
    if hub_preprocessor is not None:
        tokenizer = hub_preprocessor.tokenizer
        settings = {name: getattr(tokenizer, name) for name in _BERT_TOKENIZER_SETTINGS}
        if settings != _BERT_TOKENIZER_SETTINGS:
            raise CheckpointError(
                f"The keras-hub tokenizer's settings {settings} are not BERT's "
                f"{_BERT_TOKENIZER_SETTINGS}, which keras_bert's tokenizer follows."
            )
        vocabulary = tokenizer.get_vocabulary()
        lowercase = tokenizer.lowercase if lowercase is None else lowercase
        seq_length = seq_length or hub_preprocessor.sequence_length
        truncation = hub_preprocessor.truncate
    if vocabulary_file is not None:
        vocabulary = load_vocabulary(vocabulary_file)
    if vocabulary is None:
        logger.info("No keras-hub preprocessor and no vocabulary_file: no preprocessor.")
        return None
    _check_vocabulary_size(len(vocabulary), vocabulary_size)
    if lowercase is None:
        lowercase = infer_lowercase(vocabulary)
    return BertPreprocessor(
        vocabulary,
        lowercase=lowercase,
        seq_length=seq_length or DEFAULT_SEQ_LENGTH,
        truncation=truncation,
    )
