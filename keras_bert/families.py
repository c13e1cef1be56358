"""BERT's family, one record per Hugging Face `model_type`: what each family changes in BERT.

Every family is BERT's blocks with other settings. Its record says how to read its
`config.json` (field names and the defaults its config class assumes), how its tensors are named
(rewritten to BERT's names), which tokenizer reads its text and how pairs are packed, which head
its classifier puts on the first token, and whether it has token types, a pooler and absolute
positions. `BertConfig`, the Hugging Face reader, the checkpoint preprocessors, `BertEncoder` and
`BertClassifier` read these records; adding a family means adding a record here and the layers
it needs.

Example:
>>> family("roberta").packing.cls_token, family("distilbert").pooler
('<s>', False)
>>> sorted(FAMILIES)
['albert', 'bert', 'deberta-v2', 'distilbert', 'electra', 'roberta']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from keras_bert.errors import ConfigError

TOKENIZER_KINDS = ("wordpiece", "byte_pair", "sentencepiece")


@dataclasses.dataclass(frozen=True)
class TokenizerFiles:
    """The tokenizer of a family and the files of a checkpoint directory it reads.

    Args:
        kind: "wordpiece" (`BertPreprocessor`), "byte_pair" (`BytePairTokenizer`) or
            "sentencepiece" (`SentencePieceTokenizer`).
        files: the files it reads, in the tokenizer's argument order.
        albert_preprocessing: SentencePiece after ALBERT's own text preprocessing.
        special_tokens: tokens matched as written in the text (SentencePiece's); empty for the
            tokenizer's own.
    """

    kind: str
    files: tuple[str, ...]
    albert_preprocessing: bool = False
    special_tokens: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Packing:
    """How a family lays out `[CLS] A [SEP] B [SEP]` (the `TextPreprocessor` arguments).

    Args:
        cls_token: the token that starts a sequence.
        sep_token: the token that ends a segment.
        pad_token: the padding token.
        pair_separators: separators after segment A of a pair (RoBERTa: 2).
        second_type_id: the type id of segment B (RoBERTa: 0).
    """

    cls_token: str = "[CLS]"
    sep_token: str = "[SEP]"
    pad_token: str = "[PAD]"
    pair_separators: int = 1
    second_type_id: int = 1


@dataclasses.dataclass(frozen=True)
class ClassifierHead:
    """The head a family's sequence classifier puts on the encoder, as transformers' does.

    Args:
        activation: None for BERT's pooler output (dropout → dense); else the first token goes
            through a dense layer of its own with this activation (dropout → dense → activation
            → dropout → dense).
        dropout_before_dense: whether the first token is also dropped out before that dense
            layer (RoBERTa).
        dense_module: transformers' name of that dense layer (`pre_classifier`).
        output_module: transformers' name of the dense layer that gives the logits.
    """

    activation: str | None = None
    dropout_before_dense: bool = False
    dense_module: str | None = None
    output_module: str = "classifier"


# The fields of Google's `bert_config.json` and transformers' `BertConfig` (`config.json`),
# mapped to `BertConfig`'s.
TRANSFORMERS_BERT_FIELDS: Mapping[str, str] = {
    "vocab_size": "vocab_size",
    "hidden_size": "hidden_size",
    "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_heads",
    "intermediate_size": "intermediate_size",
    "hidden_act": "hidden_activation",
    "hidden_dropout_prob": "dropout_rate",
    "attention_probs_dropout_prob": "attention_dropout_rate",
    "max_position_embeddings": "max_position_embeddings",
    "type_vocab_size": "type_vocab_size",
    "initializer_range": "initializer_range",
    "layer_norm_eps": "layer_norm_epsilon",
}
# ALBERT's factorized embeddings and shared layers (`AlbertConfig`).
ALBERT_FIELDS: Mapping[str, str] = {
    "embedding_size": "embedding_size",
    "num_hidden_groups": "num_layer_groups",
    "inner_group_num": "inner_group_num",
}
# DeBERTa (v2, v3): relative positions and disentangled attention (`DebertaV2Config`).
DEBERTA_FIELDS = (
    "position_biased_input",
    "relative_attention",
    "position_buckets",
    "max_relative_positions",
    "pos_att_type",
    "share_att_key",
    "norm_rel_ebd",
)
# keras_bert's own extensions, which no transformers config class has.
KERAS_BERT_FIELDS = (
    "pre_layer_norm",
    "relative_attention_buckets",
    "local_attention_bias",
    "position_offset",
    "pooler",
)
# Every field BERT's and most of its family's `config.json` may hold.
BERT_CONFIG_FIELDS: Mapping[str, str] = {
    **TRANSFORMERS_BERT_FIELDS,
    **{name: name for name in KERAS_BERT_FIELDS},
    **ALBERT_FIELDS,
    **{name: name for name in DEBERTA_FIELDS},
}
DISTILBERT_FIELDS: Mapping[str, str] = {
    "vocab_size": "vocab_size",
    "dim": "hidden_size",
    "n_layers": "num_layers",
    "n_heads": "num_heads",
    "hidden_dim": "intermediate_size",
    "activation": "hidden_activation",
    "dropout": "dropout_rate",
    "attention_dropout": "attention_dropout_rate",
    "max_position_embeddings": "max_position_embeddings",
    "initializer_range": "initializer_range",
}


def _check_deberta_config(values: Mapping[str, Any]) -> None:
    """Raises a `ConfigError` for the DeBERTa variants whose layers keras_bert lacks."""
    if values.get("conv_kernel_size", 0) > 0:
        raise ConfigError(
            f"DeBERTa-v2's convolution layer (conv_kernel_size {values['conv_kernel_size']}) is "
            "not supported; DeBERTa-v3 checkpoints have none."
        )
    embedding_size = values.get("embedding_size")
    if embedding_size is not None and embedding_size != values.get("hidden_size"):
        raise ConfigError(
            f"DeBERTa embedding_size {embedding_size} differs from hidden_size "
            f"{values.get('hidden_size')}: its embedding projection is not supported."
        )


@dataclasses.dataclass(frozen=True)
class Family:
    """One family of BERT: how its checkpoints, text and heads differ from BERT's.

    Args:
        model_type: Hugging Face's `model_type` of the family's `config.json`.
        transformers_prefix: the prefix of its transformers classes (`DebertaV2` of
            `DebertaV2ForMaskedLM`, `DebertaV2Tokenizer`).
        config_fields: the fields of its `config.json` mapped to `BertConfig`'s.
        tensor_names: (pattern, replacement) regular expressions, applied in order, that
            rewrite its Hugging Face tensor names to BERT's (`BertForPreTraining`'s). Read
            backwards (`keras_bert.checkpoints.huggingface.huggingface_name`) they name BERT's
            tensors as transformers does: a rule whose BERT name holds another rule's comes
            after it.
        transformers_config_fields: the names of those `config_fields` that its transformers
            config class has (the rest are keras_bert's own).
        other_tensor_names: rules like `tensor_names` for layouts that are read, never
            written (DeBERTa's `legacy: false` masked-LM head), applied before them.
        tokenizer: its tokenizer and the files it reads.
        packing: its special tokens and pair layout.
        classifier_head: the head of its sequence classifier.
        token_types: whether its config class has token types by default (`type_vocab_size`).
        pooler: whether its encoder has BERT's `[CLS]` pooler.
        absolute_positions: whether its config class adds learned absolute positions by default
            (DeBERTa's `position_biased_input`: v3 checkpoints turn it off).
        positions_after_padding: position ids count from its padding id + 1 (RoBERTa).
        zero_padding_embeddings: embeddings at padding positions are zeroed (DeBERTa).
        pooler_optional: a checkpoint of it without pooler tensors (its masked-LM models are
            saved so) loads as an encoder without a pooler, instead of failing.
        pretraining_model: transformers has its `*ForPreTraining`: the masked-LM head and a
            sentence-pair head on the pooler (BERT's next-sentence, ALBERT's sentence-order).
        replaced_token_detection: its `*ForPreTraining` is ELECTRA's discriminator instead: a
            replaced-token head on every position (`BertReplacedTokenDetector`).
        masked_lm_activation: the activation of its masked-LM head's transform where that is
            not the encoder's `hidden_activation` (ELECTRA's generator: always "gelu").
        transformers_defaults: `BertConfig` fields whose default in its transformers config
            class differs from `BertConfig`'s, for `config.json` files silent about them
            (ELECTRA's `embedding_size` 128).
        extra_config_fields: `BertConfig` fields its `config.json` carries beyond BERT's, under
            the same names.
        check_config: raises a `ConfigError` for `config.json` values of variants keras_bert
            cannot run.
    """

    model_type: str
    transformers_prefix: str
    config_fields: Mapping[str, str]
    tensor_names: tuple[tuple[str, str], ...]
    tokenizer: TokenizerFiles
    transformers_config_fields: tuple[str, ...] = tuple(TRANSFORMERS_BERT_FIELDS)
    other_tensor_names: tuple[tuple[str, str], ...] = ()
    packing: Packing = Packing()
    classifier_head: ClassifierHead = ClassifierHead()
    token_types: bool = True
    pooler: bool = True
    absolute_positions: bool = True
    positions_after_padding: bool = False
    zero_padding_embeddings: bool = False
    pooler_optional: bool = True
    pretraining_model: bool = False
    replaced_token_detection: bool = False
    masked_lm_activation: str | None = None
    transformers_defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    extra_config_fields: tuple[str, ...] = ()
    check_config: Callable[[Mapping[str, Any]], None] | None = None

    def __post_init__(self) -> None:
        if self.tokenizer.kind not in TOKENIZER_KINDS:
            raise ConfigError(
                f"{self.model_type}: unknown tokenizer kind {self.tokenizer.kind!r}; expected "
                f"one of {', '.join(TOKENIZER_KINDS)}."
            )

    def config_defaults(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The `BertConfig` fields the family sets where its `config.json` (`values`) is silent.

        Example:
        >>> family("roberta").config_defaults({"pad_token_id": 1})
        {'position_offset': 2}
        >>> family("distilbert").config_defaults({})
        {'type_vocab_size': 0, 'pooler': False}
        >>> family("electra").config_defaults({})
        {'embedding_size': 128, 'pooler': False}
        """
        defaults: dict[str, Any] = dict(self.transformers_defaults)
        if not self.token_types:
            defaults["type_vocab_size"] = 0
        if not self.pooler:
            defaults["pooler"] = False
        if not self.absolute_positions:
            defaults["position_biased_input"] = False
        if self.positions_after_padding:
            defaults["position_offset"] = values.get("pad_token_id", 1) + 1
        return defaults


# Matched as written in the text, as Hugging Face's tokenizers of the SentencePiece families do.
_SENTENCEPIECE_SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[MASK]", "<pad>", "<unk>", "[PAD]", "[UNK]")

BERT = Family(
    model_type="bert",
    transformers_prefix="Bert",
    config_fields=BERT_CONFIG_FIELDS,
    tensor_names=(),
    tokenizer=TokenizerFiles("wordpiece", ("vocab.txt",)),
    # A BERT checkpoint without its pooler is incomplete: the missing tensors are named.
    pooler_optional=False,
    pretraining_model=True,
)
ROBERTA = Family(
    model_type="roberta",
    transformers_prefix="Roberta",
    config_fields=BERT_CONFIG_FIELDS,
    tensor_names=(
        (r"^roberta\.", "bert."),
        (r"^lm_head\.dense\.", "cls.predictions.transform.dense."),
        (r"^lm_head\.layer_norm\.", "cls.predictions.transform.LayerNorm."),
        (r"^lm_head\.bias$", "cls.predictions.bias"),
        (r"^lm_head\.decoder\.", "cls.predictions.decoder."),
    ),
    tokenizer=TokenizerFiles("byte_pair", ("vocab.json", "merges.txt")),
    packing=Packing(
        cls_token="<s>", sep_token="</s>", pad_token="<pad>", pair_separators=2, second_type_id=0
    ),
    classifier_head=ClassifierHead(
        "tanh",
        dropout_before_dense=True,
        dense_module="classifier.dense",
        output_module="classifier.out_proj",
    ),
    positions_after_padding=True,
)
DISTILBERT = Family(
    model_type="distilbert",
    transformers_prefix="DistilBert",
    config_fields=DISTILBERT_FIELDS,
    transformers_config_fields=tuple(DISTILBERT_FIELDS),
    tensor_names=(
        (r"^distilbert\.", "bert."),
        (r"transformer\.layer\.", "encoder.layer."),
        (r"attention\.q_lin\.", "attention.self.query."),
        (r"attention\.k_lin\.", "attention.self.key."),
        (r"attention\.v_lin\.", "attention.self.value."),
        (r"ffn\.lin1\.", "intermediate.dense."),
        (r"ffn\.lin2\.", "output.dense."),
        (r"output_layer_norm\.", "output.LayerNorm."),
        (r"attention\.out_lin\.", "attention.output.dense."),
        (r"sa_layer_norm\.", "attention.output.LayerNorm."),
        (r"^vocab_transform\.", "cls.predictions.transform.dense."),
        (r"^vocab_layer_norm\.", "cls.predictions.transform.LayerNorm."),
        (r"^vocab_projector\.bias$", "cls.predictions.bias"),
        (r"^vocab_projector\.weight$", "cls.predictions.decoder.weight"),
    ),
    tokenizer=TokenizerFiles("wordpiece", ("vocab.txt",)),
    classifier_head=ClassifierHead("relu", dense_module="pre_classifier"),
    token_types=False,
    pooler=False,
)
ALBERT = Family(
    model_type="albert",
    transformers_prefix="Albert",
    config_fields=BERT_CONFIG_FIELDS,
    transformers_config_fields=(*TRANSFORMERS_BERT_FIELDS, *ALBERT_FIELDS),
    tensor_names=(
        (r"^albert\.", "bert."),
        (r"albert_layer_groups\.(\d+)\.albert_layers\.(\d+)\.", r"group_\1.inner_\2."),
        (r"attention\.(query|key|value)\.", r"attention.self.\1."),
        (r"\.ffn\.", ".intermediate.dense."),
        (r"\.ffn_output\.", ".output.dense."),
        (r"full_layer_layer_norm\.", "output.LayerNorm."),
        (r"attention\.dense\.", "attention.output.dense."),
        (r"attention\.LayerNorm\.", "attention.output.LayerNorm."),
        (r"^bert\.pooler\.", "bert.pooler.dense."),
        (r"^predictions\.dense\.", "cls.predictions.transform.dense."),
        (r"^predictions\.LayerNorm\.", "cls.predictions.transform.LayerNorm."),
        (r"^predictions\.bias$", "cls.predictions.bias"),
        (r"^predictions\.decoder\.", "cls.predictions.decoder."),
        # The sentence-order head sits where BERT's next-sentence head does.
        (r"^sop_classifier\.classifier\.", "cls.seq_relationship."),
    ),
    tokenizer=TokenizerFiles(
        "sentencepiece",
        ("spiece.model",),
        albert_preprocessing=True,
        special_tokens=_SENTENCEPIECE_SPECIAL_TOKENS,
    ),
    packing=Packing(pad_token="<pad>"),
    pretraining_model=True,
)
DEBERTA_V2 = Family(
    model_type="deberta-v2",
    transformers_prefix="DebertaV2",
    config_fields=BERT_CONFIG_FIELDS,
    transformers_config_fields=(*TRANSFORMERS_BERT_FIELDS, *DEBERTA_FIELDS),
    tensor_names=(
        (r"^deberta\.", "bert."),
        (r"attention\.self\.(query|key|value)_proj\.", r"attention.self.\1."),
    ),
    other_tensor_names=(
        # The masked-LM head of `legacy: false` checkpoints (`cls.predictions` otherwise).
        (r"^lm_predictions\.lm_head\.(dense|LayerNorm)\.", r"cls.predictions.transform.\1."),
        (r"^lm_predictions\.lm_head\.bias$", "cls.predictions.bias"),
        # The replaced-token-detection head of ELECTRA-style pretraining: no model reads it.
        (r"^mask_predictions\.", "cls.mask_predictions."),
    ),
    tokenizer=TokenizerFiles(
        "sentencepiece", ("spm.model",), special_tokens=_SENTENCEPIECE_SPECIAL_TOKENS
    ),
    # Its context pooler: dense → GELU on the first token.
    classifier_head=ClassifierHead("gelu", dense_module="pooler.dense"),
    token_types=False,
    pooler=False,
    zero_padding_embeddings=True,
    extra_config_fields=DEBERTA_FIELDS,
    check_config=_check_deberta_config,
)

ELECTRA = Family(
    model_type="electra",
    transformers_prefix="Electra",
    config_fields=BERT_CONFIG_FIELDS,
    transformers_config_fields=(*TRANSFORMERS_BERT_FIELDS, "embedding_size"),
    tensor_names=(
        (r"^electra\.", "bert."),
        # ALBERT's factorized embeddings without ALBERT's name; read after the prefix rule.
        (r"^bert\.embeddings_project\.", "bert.encoder.embedding_hidden_mapping_in."),
        # The generator's masked-LM head (its decoder is the token embeddings).
        (r"^generator_predictions\.(dense|LayerNorm)\.", r"cls.predictions.transform.\1."),
        (r"^generator_lm_head\.bias$", "cls.predictions.bias"),
        (r"^generator_lm_head\.weight$", "cls.predictions.decoder.weight"),
        # The discriminator's replaced-token head.
        (r"^discriminator_predictions\.", "cls.discriminator_predictions."),
    ),
    tokenizer=TokenizerFiles("wordpiece", ("vocab.txt",)),
    # ElectraClassificationHead: dropout → dense → GELU → dropout → dense on the first token.
    classifier_head=ClassifierHead(
        "gelu",
        dropout_before_dense=True,
        dense_module="classifier.dense",
        output_module="classifier.out_proj",
    ),
    pooler=False,
    replaced_token_detection=True,
    masked_lm_activation="gelu",
    transformers_defaults={"embedding_size": 128},
)

FAMILIES: dict[str, Family] = {
    record.model_type: record for record in (BERT, ROBERTA, DISTILBERT, ALBERT, DEBERTA_V2, ELECTRA)
}


def family(model_type: str) -> Family:
    """The record of a `model_type`.

    Raises:
        ConfigError: no family of that `model_type` is registered.

    Example:
    >>> family("albert").tokenizer.files
    ('spiece.model',)
    """
    try:
        return FAMILIES[model_type]
    except KeyError:
        raise ConfigError(
            f"Unknown model_type {model_type!r}; expected one of {', '.join(FAMILIES)}."
        ) from None
