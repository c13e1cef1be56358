"""One entry point for BERT and its family: a Hugging Face (or Google) directory in, the model
its `model_type` declares out.

`bert`, `roberta`, `distilbert`, `albert`, `deberta-v2` (DeBERTa-v3), `modernbert`,
`xlm-roberta` and `electra` checkpoints load into `BertEncoder` (BERT's blocks with the family's
settings: RoBERTa's position offset and LayerNorm epsilon, DistilBERT's missing token types and
pooler, ALBERT's factorized embeddings and shared layers, DeBERTa's relative positions and
disentangled attention, ModernBERT's rotary positions, windowed attention and GeGLU, XLM-R's
RoBERTa blocks, ELECTRA's factorized embeddings without sharing), exact to Hugging Face's
outputs.
"""

from __future__ import annotations

import os
from typing import Any

from keras_bert.checkpoints.location import CheckpointFiles, find_checkpoint
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.masked_lm import BertMaskedLM
from keras_bert.models.replaced_token_detector import BertReplacedTokenDetector
from keras_bert.text.checkpoint_preprocessors import checkpoint_preprocessor


def load_encoder(
    path: str | os.PathLike | CheckpointFiles, revision: str | None = None, **overrides: Any
) -> BertEncoder:
    """The encoder of a checkpoint of any supported family.

    Args:
        path: a Hugging Face directory (`config.json` + `model.safetensors` or
            `pytorch_model.bin`), a Google one, a Hub id (`roberta-base`, `org/name`), or the
            `CheckpointFiles` that `keras_bert.checkpoints.find_checkpoint` found.
        revision: the Hub branch, tag or commit of a Hub id (default: `main`).
        **overrides: `BertEncoder.from_checkpoint` arguments (`output_all_layers`, `dtype`) and
            config fields that keep the weights' shapes (`dropout_rate`, ...).

    Example:
    >>> encoder = load_encoder("../shared/reference/variants/distilbert")
    >>> encoder.bert_config.model_type, "pooled_output" in encoder.output
    ('distilbert', False)
    """
    return BertEncoder.from_checkpoint(path, revision=revision, **overrides)


def load_masked_lm(
    path: str | os.PathLike | CheckpointFiles, revision: str | None = None, **overrides: Any
) -> BertMaskedLM:
    """The encoder with its masked-LM head, both from the checkpoint (a directory or a Hub id at
    `revision`, as `load_encoder` takes).

    Called with the encoder inputs plus `masked_lm_positions` `[batch, predictions]`, it
    returns `{"masked_lm": logits}` `[batch, predictions, vocabulary]`.
    """
    return BertMaskedLM.pretrained(path, revision, **overrides)


def load_replaced_token_detector(
    path: str | os.PathLike | CheckpointFiles, revision: str | None = None, **overrides: Any
) -> BertReplacedTokenDetector:
    """ELECTRA's discriminator: the encoder with its replaced-token head, both from the
    checkpoint (transformers' `ElectraForPreTraining`, or a `pipelines.pretrain` run of the
    replaced-token objective; a directory or a Hub id at `revision`, as `load_encoder` takes).

    Called with the encoder inputs, it returns one logit per position, float32
    `[batch, sequence]`: positive where the token looks replaced.

    Example:
    >>> import numpy as np
    >>> checkpoint = "../shared/reference/variants/electra/discriminator"
    >>> detector = load_replaced_token_detector(checkpoint)
    >>> ids = np.array([[2, 45, 46, 3]])
    >>> tuple(detector({"input_word_ids": ids, "input_mask": np.ones_like(ids),
    ...                 "input_type_ids": np.zeros_like(ids)}).shape)
    (1, 4)
    """
    return BertReplacedTokenDetector.pretrained(path, revision, **overrides)


def load_preprocessor(
    path: str | os.PathLike | CheckpointFiles,
    seq_length: int | None = None,
    revision: str | None = None,
    vocabulary_from: str | os.PathLike | None = None,
    **options: Any,
):
    """The in-graph preprocessor of a checkpoint's tokenizer, chosen by its `model_type`.

    WordPiece (`BertPreprocessor`) for `bert` and `distilbert`; byte-level BPE for `roberta`
    and `modernbert` (its `tokenizer.json`), SentencePiece for `albert` and `deberta-v2` and
    XLM-RoBERTa's unigram model for `xlm-roberta` (`TextPreprocessor`), each packing pairs as
    its family does. See `keras_bert.text.checkpoint_preprocessors`.

    Args:
        path: the checkpoint directory (or a file in it, or a Hub id, as `load_encoder` takes);
            of a Hub repo only the config and tokenizer files are downloaded.
        seq_length: length of the packed inputs (default 128, or the most tokens the model
            reads where that is less); a longer one is a `ConfigError`, longer texts are cut.
        revision: the Hub branch, tag or commit of a Hub id.
        vocabulary_from: another checkpoint (directory or Hub id) whose tokenizer the model was
            trained with, for checkpoints published without one (SpanBERT: `bert-base-cased`).
        **options: further preprocessor arguments (`truncation`, `name`).

    Example:
    >>> preprocessor = load_preprocessor("../shared/reference/variants/roberta", seq_length=8)
    >>> preprocessor((["The cat"], ["sat."]))["input_word_ids"].numpy().tolist()
    [[0, 356, 279, 2, 2, 87, 273, 2]]
    """
    if vocabulary_from is not None:
        path, revision = vocabulary_from, None
    checkpoint = find_checkpoint(path, revision, weights=False)
    return checkpoint_preprocessor(checkpoint, seq_length, **options)
