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
['albert', 'bert', 'deberta-v2', 'distilbert', 'electra', 'modernbert', 'roberta', 'xlm-roberta']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from keras_bert.errors import ConfigError

TOKENIZER_KINDS = ("wordpiece", "byte_pair", "sentencepiece", "unigram")


@dataclasses.dataclass(frozen=True)
class TokenizerFiles:
    """The tokenizer of a family and the files of a checkpoint directory it reads.

    Args:
        kind: "wordpiece" (`BertPreprocessor`), "byte_pair" (`BytePairTokenizer`),
            "sentencepiece" (`SentencePieceTokenizer`) or "unigram" (`UnigramTokenizer`: a
            SentencePiece model as Hugging Face `tokenizers` runs it, under fairseq's ids).
        files: the files it reads, in the tokenizer's argument order.
        albert_preprocessing: SentencePiece after ALBERT's own text preprocessing.
        special_tokens: tokens matched as written in the text (SentencePiece's); empty for the
            tokenizer's own.

    A byte-pair tokenizer whose one file is `tokenizer.json` (ModernBERT's) reads its
    vocabulary, merges and added tokens from it (`BytePairTokenizer.from_tokenizer_json`).
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
        dense_module: transformers' name of that dense layer (`pre_classifier`), as the
            family's tensor rules read it (ModernBERT's `head.dense` is canonically the masked-LM
            transform's: `cls.predictions.transform.dense`).
        output_module: transformers' name of the dense layer that gives the logits.
        layer_norm_module: the LayerNorm after the activation, where the head has one
            (ModernBERT's prediction head: dense → GELU → LayerNorm), named as `dense_module`.
        shared_by_tasks: the dense layer (and its LayerNorm) is the family's prediction head,
            which every task puts on what it reads (ModernBERT): the pooled vector of either
            pooling, and each token of a token classifier or a question answerer.
        pooling_field: the `config.json` field that names the classifier's pooling, "cls" or
            "mean" (ModernBERT's `classifier_pooling`); None where the family has one pooling.
    """

    activation: str | None = None
    dropout_before_dense: bool = False
    dense_module: str | None = None
    output_module: str = "classifier"
    layer_norm_module: str | None = None
    shared_by_tasks: bool = False
    pooling_field: str | None = None


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
        extra_config_fields: `BertConfig` fields its `config.json` carries beyond BERT's, under
            the same names.
        check_config: raises a `ConfigError` for `config.json` values of variants keras_bert
            cannot run.
        flat_config: rewrites a `config.json`'s nested values into the flat fields of
            `config_fields` (ModernBERT's `layer_types` and `rope_parameters` of transformers 5),
            before they are read; None where they are flat.
        default_fields: `BertConfig` values its config class assumes where a `config.json` is
            silent, and the settings every model of the family has (ModernBERT's pre-LayerNorm
            blocks and gated feed-forward; ELECTRA's `embedding_size` 128).
        fused_tensors: (module, its parts): canonical modules whose tensors hold those of the
            parts side by side along their last axis (ModernBERT's `Wqkv`: the query, key and
            value projections in one matrix), split when read and joined when written.
        first_block_attention_norm: whether the first pre-LayerNorm block normalizes its
            attention's input (ModernBERT's reads the embeddings' LayerNorm instead).
        question_answering_module: transformers' name of its question answerer's dense layer.
        refuses_token_types: type ids other than 0 are an error, not ignored (ModernBERT's
            transformers model takes no `token_type_ids`; DistilBERT's and DeBERTa-v3's
            embeddings ignore them).
        cls_id_fields: the `config.json` fields of the id of the packing's `cls_token`
            (ModernBERT's `cls_token_id`, `bos_token_id`), written with a published model.
        sep_id_fields: those of the id of its `sep_token`.
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
    extra_config_fields: tuple[str, ...] = ()
    check_config: Callable[[Mapping[str, Any]], None] | None = None
    flat_config: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    default_fields: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    fused_tensors: tuple[tuple[str, tuple[str, ...]], ...] = ()
    first_block_attention_norm: bool = True
    question_answering_module: str = "qa_outputs"
    refuses_token_types: bool = False
    cls_id_fields: tuple[str, ...] = ()
    sep_id_fields: tuple[str, ...] = ()

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
        defaults: dict[str, Any] = dict(self.default_fields)
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

# ModernBERT (Warner et al. 2024): `ModernBertConfig`'s fields. One keras_bert field may stand for
# several of them: every dense layer's bias (which `_check_modernbert_config` holds equal), the
# embeddings' and feed-forward's dropout (the last one read counts).
MODERNBERT_FIELDS: Mapping[str, str] = {
    "vocab_size": "vocab_size",
    "hidden_size": "hidden_size",
    "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_heads",
    "intermediate_size": "intermediate_size",
    "hidden_activation": "hidden_activation",
    "embedding_dropout": "dropout_rate",
    "mlp_dropout": "dropout_rate",
    "attention_dropout": "attention_dropout_rate",
    "max_position_embeddings": "max_position_embeddings",
    "initializer_range": "initializer_range",
    "norm_eps": "layer_norm_epsilon",
    "norm_bias": "layer_norm_bias",
    "attention_bias": "dense_bias",
    "mlp_bias": "dense_bias",
    "classifier_bias": "dense_bias",
    "global_rope_theta": "rotary_base",
    "local_rope_theta": "local_rotary_base",
    "local_attention": "local_attention_window",
    "global_attn_every_n_layers": "global_attention_interval",
}
# The values `ModernBertConfig` assumes, and what every ModernBERT has: pre-LayerNorm blocks
# (the embeddings' LayerNorm is the first block's), GeGLU feed-forward, rotary positions.
MODERNBERT_DEFAULTS: Mapping[str, Any] = {
    "pre_layer_norm": True,
    "gated_feed_forward": True,
    "max_position_embeddings": 8192,
    "layer_norm_epsilon": 1e-5,
    "layer_norm_bias": False,
    "dense_bias": False,
    "dropout_rate": 0.0,
    "attention_dropout_rate": 0.0,
    "rotary_base": 160_000.0,
    "local_rotary_base": 10_000.0,
    "local_attention_window": 128,
    "global_attention_interval": 3,
}
# `layer_types` entries and the `rope_parameters` key of each, with its flat field.
_MODERNBERT_LAYER_TYPES = {
    "full_attention": "global_rope_theta",
    "sliding_attention": "local_rope_theta",
}


def _flat_modernbert_config(values: Mapping[str, Any]) -> dict[str, Any]:
    """ModernBERT's `config.json` with transformers 5's `rope_parameters` (a base per layer
    type) and `layer_types` read into the flat fields older configs have.

    Example:
    >>> flat = _flat_modernbert_config({
    ...     "layer_types": ["full_attention", "sliding_attention", "sliding_attention"] * 2,
    ...     "rope_parameters": {"full_attention": {"rope_theta": 1e5, "rope_type": "default"}},
    ... })
    >>> flat["global_attn_every_n_layers"], flat["global_rope_theta"]
    (3, 100000.0)
    """
    flat = dict(values)
    if values.get("rope_scaling"):
        raise ConfigError(
            f"ModernBERT's rope_scaling {values['rope_scaling']!r} is not supported: keras_bert "
            "computes the default rotary positions."
        )
    for layer_type, field in _MODERNBERT_LAYER_TYPES.items():
        parameters = (values.get("rope_parameters") or {}).get(layer_type) or {}
        if parameters.get("rope_type", "default") != "default":
            raise ConfigError(
                f"ModernBERT's {layer_type} rope_type {parameters['rope_type']!r} is not "
                "supported: keras_bert computes the default rotary positions."
            )
        if "rope_theta" in parameters:
            flat[field] = parameters["rope_theta"]
    layer_types = values.get("layer_types")
    if layer_types is not None:
        globals_at = [index for index, kind in enumerate(layer_types) if kind == "full_attention"]
        interval = globals_at[1] - globals_at[0] if len(globals_at) > 1 else len(layer_types)
        expected = [
            "sliding_attention" if index % interval else "full_attention"
            for index in range(len(layer_types))
        ]
        if list(layer_types) != expected:
            raise ConfigError(
                f"ModernBERT's layer_types {list(layer_types)} do not put a global layer first "
                "and then every n-th: keras_bert reads that pattern (global_attn_every_n_layers)."
            )
        flat["global_attn_every_n_layers"] = interval
    return flat


def _check_modernbert_config(values: Mapping[str, Any]) -> None:
    """Raises a `ConfigError` for the ModernBERT settings keras_bert's layers do not have."""
    biases = {name: values.get(name, False) for name in MODERNBERT_FIELDS if name.endswith("_bias")}
    biases.pop("norm_bias")
    if len(set(biases.values())) > 1:
        raise ConfigError(
            f"ModernBERT's dense layers differ in their biases ({biases}): keras_bert gives "
            "them one setting."
        )
    if values.get("classifier_activation", "gelu") != "gelu":
        raise ConfigError(
            f"ModernBERT's classifier_activation {values['classifier_activation']!r} is not "
            "supported: keras_bert's ModernBERT heads compute GELU."
        )
    if not values.get("decoder_bias", True) or not values.get("tie_word_embeddings", True):
        raise ConfigError(
            "ModernBERT's masked-LM decoder without its bias, or not tied to the token "
            "embeddings, is not supported."
        )


MODERNBERT = Family(
    model_type="modernbert",
    transformers_prefix="ModernBert",
    config_fields=MODERNBERT_FIELDS,
    transformers_config_fields=tuple(MODERNBERT_FIELDS),
    tensor_names=(
        (r"^model\.", "bert."),
        (r"^bert\.layers\.(\d+)\.", r"bert.encoder.layer.\1."),
        (r"^bert\.embeddings\.tok_embeddings\.", "bert.embeddings.word_embeddings."),
        (r"^bert\.embeddings\.norm\.", "bert.embeddings.LayerNorm."),
        (r"^bert\.final_norm\.", "bert.encoder.final_layer_norm."),
        (r"\.attn\.Wqkv\.", ".attention.self.query_key_value."),
        # Before the attention's: ".attention.output.dense." holds ".output.dense.".
        (r"\.mlp\.Wi\.", ".intermediate.dense."),
        (r"\.mlp\.Wo\.", ".output.dense."),
        (r"\.mlp_norm\.", ".output.LayerNorm."),
        (r"\.attn\.Wo\.", ".attention.output.dense."),
        (r"\.attn_norm\.", ".attention.output.LayerNorm."),
        # The prediction head: the masked LM's transform, and every task head's (`head.`).
        (r"^head\.dense\.", "cls.predictions.transform.dense."),
        (r"^head\.norm\.", "cls.predictions.transform.LayerNorm."),
        (r"^decoder\.bias$", "cls.predictions.bias"),
        (r"^decoder\.weight$", "cls.predictions.decoder.weight"),
    ),
    fused_tensors=(
        (
            "attention/self/query_key_value",
            ("attention/self/query", "attention/self/key", "attention/self/value"),
        ),
    ),
    tokenizer=TokenizerFiles("byte_pair", ("tokenizer.json",)),
    packing=Packing(second_type_id=0),
    cls_id_fields=("cls_token_id", "bos_token_id"),
    sep_id_fields=("sep_token_id", "eos_token_id"),
    classifier_head=ClassifierHead(
        "gelu",
        dense_module="cls.predictions.transform.dense",
        layer_norm_module="cls.predictions.transform.LayerNorm",
        shared_by_tasks=True,
        pooling_field="classifier_pooling",
    ),
    token_types=False,
    pooler=False,
    absolute_positions=False,
    check_config=_check_modernbert_config,
    flat_config=_flat_modernbert_config,
    default_fields=MODERNBERT_DEFAULTS,
    first_block_attention_norm=False,
    question_answering_module="classifier",
    refuses_token_types=True,
)

# RoBERTa's architecture, heads and packing, with a multilingual SentencePiece vocabulary.
XLM_ROBERTA = dataclasses.replace(
    ROBERTA,
    model_type="xlm-roberta",
    transformers_prefix="XLMRoberta",
    tokenizer=TokenizerFiles(
        "unigram",
        ("sentencepiece.bpe.model",),
        special_tokens=("<s>", "<pad>", "</s>", "<unk>", "<mask>"),
    ),
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
    default_fields={"embedding_size": 128},
)

FAMILIES: dict[str, Family] = {
    record.model_type: record
    for record in (BERT, ROBERTA, DISTILBERT, ALBERT, DEBERTA_V2, MODERNBERT, XLM_ROBERTA, ELECTRA)
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
