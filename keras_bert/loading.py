"""One entry point for BERT and its family: a Hugging Face (or Google) directory in, the model
its `model_type` declares out.

`bert`, `roberta`, `distilbert`, `albert` and `deberta-v2` (DeBERTa-v3) checkpoints load into
`BertEncoder` (BERT's blocks with the family's settings: RoBERTa's position offset and LayerNorm
epsilon, DistilBERT's missing token types and pooler, ALBERT's factorized embeddings and shared
layers, DeBERTa's relative positions and disentangled attention), exact to Hugging Face's
outputs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from keras_bert.errors import CheckpointError, ConfigError
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.masked_lm import MASKED_LM_SCOPE, BertMaskedLM, masked_lm_head_variables


def load_encoder(path: str | Path, revision: str | None = None, **overrides: Any) -> BertEncoder:
    """The encoder of a checkpoint of any supported family.

    Args:
        path: a Hugging Face directory (`config.json` + `model.safetensors` or
            `pytorch_model.bin`), a Google one, or a Hub id (`roberta-base`, `org/name`).
        revision: the Hub branch, tag or commit of a Hub id (default: `main`).
        **overrides: `BertEncoder.from_checkpoint` arguments (`output_all_layers`, `dtype`) and
            config fields that keep the weights' shapes (`dropout_rate`, ...).

    Example:
    >>> encoder = load_encoder("../shared/reference/variants/distilbert")
    >>> encoder.bert_config.model_type, "pooled_output" in encoder.output
    ('distilbert', False)
    """
    return BertEncoder.from_checkpoint(path, revision=revision, **overrides)


def load_masked_lm(path: str | Path, revision: str | None = None, **overrides: Any) -> BertMaskedLM:
    """The encoder with its masked-LM head, both from the checkpoint (a directory or a Hub id at
    `revision`, as `load_encoder` takes).

    Called with the encoder inputs plus `masked_lm_positions` `[batch, predictions]`, it
    returns `{"masked_lm": logits}` `[batch, predictions, vocabulary]`.
    """
    from keras_bert.checkpoints import load_checkpoint
    from keras_bert.checkpoints.variables import restore_variables

    checkpoint = load_checkpoint(path, revision)  # read once, for the encoder and the head
    if not any(name.startswith(MASKED_LM_SCOPE) for name in checkpoint.tensors):
        raise ConfigError(f"{path} has no masked-LM head ({MASKED_LM_SCOPE}...).")
    encoder = BertEncoder.from_checkpoint(checkpoint, **overrides)
    model = BertMaskedLM(encoder, dtype=overrides.get("dtype"))
    restore_variables(masked_lm_head_variables(model.masked_lm_head), checkpoint, MASKED_LM_SCOPE)
    return model


def load_preprocessor(
    path: str | Path,
    seq_length: int = 128,
    revision: str | None = None,
    vocabulary_from: str | Path | None = None,
    **options: Any,
):
    """The in-graph preprocessor of a checkpoint's tokenizer, chosen by its `model_type`.

    WordPiece (`BertPreprocessor`) for `bert` and `distilbert`; byte-level BPE for `roberta`
    and SentencePiece for `albert` and `deberta-v2` (`TextPreprocessor`), each packing pairs
    as its family does. See `keras_bert.text.checkpoint_preprocessors`.

    Args:
        path: the checkpoint directory (or a file in it, or a Hub id, as `load_encoder` takes);
            of a Hub repo only the config and tokenizer files are downloaded.
        seq_length: length of the packed inputs.
        revision: the Hub branch, tag or commit of a Hub id.
        vocabulary_from: another checkpoint (directory or Hub id) whose tokenizer the model was
            trained with, for checkpoints published without one (SpanBERT: `bert-base-cased`).
        **options: further preprocessor arguments (`truncation`, `name`).

    Example:
    >>> preprocessor = load_preprocessor("../shared/reference/variants/roberta", seq_length=8)
    >>> preprocessor((["The cat"], ["sat."]))["input_word_ids"].numpy().tolist()
    [[0, 356, 279, 2, 2, 87, 273, 2]]
    """
    from keras_bert.checkpoints.location import checkpoint_directory
    from keras_bert.text.checkpoint_preprocessors import checkpoint_preprocessor

    if vocabulary_from is not None:
        return checkpoint_preprocessor(
            checkpoint_directory(vocabulary_from), seq_length=seq_length, **options
        )
    directory = checkpoint_directory(path, revision)
    try:
        return checkpoint_preprocessor(directory, seq_length=seq_length, **options)
    except (CheckpointError, FileNotFoundError) as error:
        raise CheckpointError(
            f"{error} If {path} was published without its tokenizer, take the one it was trained "
            "with: load_preprocessor(..., vocabulary_from=<its directory or Hub id>)."
        ) from None
