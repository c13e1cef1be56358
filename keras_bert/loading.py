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

from keras_bert.errors import ConfigError
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.masked_lm import MASKED_LM_SCOPE, BertMaskedLM, masked_lm_head_variables


def load_encoder(path: str | Path, **overrides: Any) -> BertEncoder:
    """The encoder of a checkpoint of any supported family.

    Args:
        path: a Hugging Face directory (`config.json` + `model.safetensors`) or a Google one.
        **overrides: `BertEncoder.from_checkpoint` arguments (`output_all_layers`, `dtype`) and
            config fields that keep the weights' shapes (`dropout_rate`, ...).

    Example:
    >>> encoder = load_encoder("../shared/reference/variants/distilbert")
    >>> encoder.bert_config.model_type, "pooled_output" in encoder.output
    ('distilbert', False)
    """
    return BertEncoder.from_checkpoint(path, **overrides)


def load_masked_lm(path: str | Path, **overrides: Any) -> BertMaskedLM:
    """The encoder with its masked-LM head, both from the checkpoint.

    Called with the encoder inputs plus `masked_lm_positions` `[batch, predictions]`, it
    returns `{"masked_lm": logits}` `[batch, predictions, vocabulary]`.
    """
    from keras_bert.checkpoints import load_checkpoint
    from keras_bert.checkpoints.variables import restore_variables

    checkpoint = load_checkpoint(path)  # read once, for the encoder and the head
    if not any(name.startswith(MASKED_LM_SCOPE) for name in checkpoint.tensors):
        raise ConfigError(f"{path} has no masked-LM head ({MASKED_LM_SCOPE}...).")
    encoder = BertEncoder.from_checkpoint(checkpoint, **overrides)
    model = BertMaskedLM(encoder, dtype=overrides.get("dtype"))
    restore_variables(masked_lm_head_variables(model.masked_lm_head), checkpoint, MASKED_LM_SCOPE)
    return model


def load_preprocessor(path: str | Path, seq_length: int = 128, **options: Any):
    """The in-graph preprocessor of a checkpoint's tokenizer (WordPiece: BERT, DistilBERT)."""
    from keras_bert.checkpoints.loading import locate_checkpoint
    from keras_bert.config import BertConfig
    from keras_bert.text import BertPreprocessor

    directory = locate_checkpoint(path)[0]
    config_files = [directory / name for name in ("config.json", "bert_config.json")]
    config_file = next((file for file in config_files if file.is_file()), None)
    model_type = BertConfig.from_json_file(config_file).model_type if config_file else "bert"
    if model_type == "roberta":
        raise ConfigError(
            f"{path}: RoBERTa's byte-level BPE tokenizer has no in-graph implementation yet; "
            "tokenize with `tokenizers` and feed ids (input_word_ids, input_mask)."
        )
    return BertPreprocessor.from_checkpoint(str(directory), seq_length=seq_length, **options)
