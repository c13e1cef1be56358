"""BertConfig: the sizes of a BERT encoder, its presets, validation and JSON round-trip."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, NamedTuple

from keras_bert.errors import ConfigError
from keras_bert.families import FAMILIES, family

ACTIVATIONS = ("gelu", "gelu_approximate", "relu")
# DeBERTa's disentangled attention terms: content→position and position→content.
RELATIVE_ATTENTION_TERMS = ("c2p", "p2c")
RELATIVE_EMBEDDING_NORMS = ("none", "layer_norm")

_REQUIRED = ("vocab_size", "hidden_size", "num_layers", "num_heads", "intermediate_size")

# Hugging Face `hidden_act` names mapped to ours. HF's "gelu" is the exact erf form; the original
# TF1 BERT code used the tanh approximation ("gelu_new"/"gelu_pytorch_tanh" in HF).
_HF_ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_new": "gelu_approximate",
    "gelu_pytorch_tanh": "gelu_approximate",
    "gelu_fast": "gelu_approximate",
    "relu": "relu",
}
# Ours mapped to the names transformers' configs (and Google's) give them.
_WRITTEN_ACTIVATIONS = {"gelu": "gelu", "gelu_approximate": "gelu_new", "relu": "relu"}


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """The hyper-parameters of a BERT encoder.

    Args:
        vocab_size: number of WordPiece ids.
        hidden_size: width of every layer (H).
        num_layers: number of encoder blocks (L).
        num_heads: attention heads per block (A); must divide `hidden_size`.
        intermediate_size: width of the feed-forward layer (4H in the paper).
        hidden_activation: "gelu" (exact erf), "gelu_approximate" (tanh, as the original TF1 code)
            or "relu".
        dropout_rate: dropout on embeddings and on every residual branch.
        attention_dropout_rate: dropout on attention probabilities.
        max_position_embeddings: number of learned positions (the longest input it reads).
        type_vocab_size: number of segment ids.
        initializer_range: standard deviation of the truncated-normal initializer.
        layer_norm_epsilon: epsilon of every LayerNormalization.
        pre_layer_norm: pre-LayerNorm blocks and a final LayerNorm (a budget-training switch;
            BERT's blocks are post-LN).
        relative_attention_buckets: a learned attention bias per head and bucket of relative
            offsets (T5's, Raffel et al. 2020) in every block, beside the absolute positions:
            a budget-training switch, 0 (off) for BERT.
        local_attention_bias: with relative attention, each head starts with this bias toward
            one neighbour (−1, +1, −2, +2, ... by head; Raganato et al. 2020's fixed
            previous/next-token heads as a starting point), so that context is visible from the
            first step; 0 starts the biases at zero.
        model_type: the family the weights come from: "bert", "roberta", "distilbert",
            "albert", "deberta-v2" (DeBERTa-v2 and v3; Hugging Face's `model_type`),
            "modernbert", "xlm-roberta" or "electra": its record in `keras_bert.families`
            names their tensors and picks their tokenizer, packing and classifier head.
            DeBERTa zeroes the embeddings at padding.
        position_offset: the position id of the first token (RoBERTa: its padding id + 1;
            positions then count real tokens only). 0 for BERT.
        pooler: whether the encoder has BERT's `[CLS]` pooler (DistilBERT has none).
        embedding_size: the factorized embedding width E of ALBERT and ELECTRA (projected to
            `hidden_size` where it differs); None for BERT's (E = H).
        num_layer_groups: ALBERT's cross-layer sharing: `num_layers` layers run on this many
            groups of weights (layer l uses group `int(l / (num_layers / num_layer_groups))`);
            None for BERT's own weights per layer.
        inner_group_num: blocks per group, run one after another in each layer (ALBERT).
        position_biased_input: whether learned absolute positions are added to the embeddings
            (DeBERTa-v3 has none: its positions are relative).
        relative_attention: DeBERTa's disentangled self-attention over relative positions.
        position_buckets: relative distances are log-bucketed into `2 * position_buckets`
            embeddings (distances below `position_buckets / 2` keep their own); -1 for none.
        max_relative_positions: the distance the log buckets reach (and without buckets the
            span of the relative embeddings); -1 for `max_position_embeddings`.
        pos_att_type: the disentangled terms besides content→content, "|"-separated:
            "c2p" (content→position), "p2c" (position→content).
        share_att_key: whether the relative embeddings go through the content query and key
            projections (DeBERTa-v3) instead of their own.
        norm_rel_ebd: "layer_norm" to normalize the relative embeddings, or "none".
        rotary_base: the base of rotary position embeddings (RoPE, Su et al. 2021) on the
            queries and keys of the global-attention layers (ModernBERT: 160,000); 0 for none.
        local_rotary_base: the rotary base of the local-attention layers (ModernBERT: 10,000).
        local_attention_window: the window of the local-attention layers: each token attends to
            the tokens at most `local_attention_window // 2` positions away (ModernBERT's
            `local_attention`, 128); 0 for none (every layer attends globally).
        global_attention_interval: with a window, layer l attends globally where
            `l % global_attention_interval == 0`, the others within the window (ModernBERT: 3).
        gated_feed_forward: the feed-forward's first projection is a gated linear unit
            (GeGLU with GELU, Shazeer 2020: `activation(x W) * (x V)`; ModernBERT).
        dense_bias: whether the encoder's dense layers (and its heads' transforms) have biases
            (ModernBERT's have none).
        layer_norm_bias: whether its LayerNorms have a bias (beta).

    Example:
    >>> config = BertConfig.preset("tiny")
    >>> config.num_layers, config.hidden_size, config.head_size
    (2, 128, 64)
    >>> BertConfig.from_json(config.to_json()) == config
    True
    """

    vocab_size: int = 30522
    hidden_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    intermediate_size: int = 3072
    hidden_activation: str = "gelu"
    dropout_rate: float = 0.1
    attention_dropout_rate: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_epsilon: float = 1e-12
    pre_layer_norm: bool = False
    relative_attention_buckets: int = 0
    local_attention_bias: float = 0.0
    model_type: str = "bert"
    position_offset: int = 0
    pooler: bool = True
    embedding_size: int | None = None
    num_layer_groups: int | None = None
    inner_group_num: int = 1
    position_biased_input: bool = True
    relative_attention: bool = False
    position_buckets: int = -1
    max_relative_positions: int = -1
    pos_att_type: str = ""
    share_att_key: bool = False
    norm_rel_ebd: str = "none"
    rotary_base: float = 0.0
    local_rotary_base: float = 0.0
    local_attention_window: int = 0
    global_attention_interval: int = 1
    gated_feed_forward: bool = False
    dense_bias: bool = True
    layer_norm_bias: bool = True

    def __post_init__(self) -> None:
        for name in (
            "vocab_size",
            "hidden_size",
            "num_layers",
            "num_heads",
            "intermediate_size",
            "max_position_embeddings",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}.")
        if isinstance(self.type_vocab_size, bool) or not isinstance(self.type_vocab_size, int):
            raise ConfigError(f"type_vocab_size must be an integer, got {self.type_vocab_size!r}.")
        if self.type_vocab_size < 0 or self.position_offset < 0:
            raise ConfigError("type_vocab_size and position_offset must not be negative.")
        family(self.model_type)
        if self.num_layer_groups is not None and not (
            0 < self.num_layer_groups <= self.num_layers and self.inner_group_num > 0
        ):
            raise ConfigError(
                f"num_layer_groups ({self.num_layer_groups}) must be in 1 ... num_layers "
                f"({self.num_layers}), inner_group_num ({self.inner_group_num}) positive."
            )
        if self.hidden_size % self.num_heads:
            raise ConfigError(
                f"hidden_size ({self.hidden_size}) is not divisible by num_heads "
                f"({self.num_heads}); each head needs hidden_size / num_heads dimensions."
            )
        if self.hidden_activation not in ACTIVATIONS:
            raise ConfigError(
                f"Unknown hidden_activation {self.hidden_activation!r}; expected one of "
                f"{', '.join(ACTIVATIONS)}."
            )
        for name in ("dropout_rate", "attention_dropout_rate"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ConfigError(f"{name} must be in [0, 1), got {value!r}.")
        if self.initializer_range <= 0 or self.layer_norm_epsilon <= 0:
            raise ConfigError("initializer_range and layer_norm_epsilon must be positive.")
        unknown_terms = set(self.relative_attention_terms) - set(RELATIVE_ATTENTION_TERMS)
        if unknown_terms:
            raise ConfigError(
                f"Unknown pos_att_type {self.pos_att_type!r}; its terms are "
                f"{', '.join(RELATIVE_ATTENTION_TERMS)}, separated by '|'."
            )
        if self.norm_rel_ebd not in RELATIVE_EMBEDDING_NORMS:
            raise ConfigError(
                f"Unknown norm_rel_ebd {self.norm_rel_ebd!r}; expected one of "
                f"{', '.join(RELATIVE_EMBEDDING_NORMS)}."
            )
        self._check_rotary_and_local_attention()
        if self.relative_attention and self.relative_attention_span < 2:
            raise ConfigError(
                f"position_buckets ({self.position_buckets}) and max_relative_positions "
                f"({self.max_relative_positions}) leave no relative positions to attend to."
            )

    def _check_rotary_and_local_attention(self) -> None:
        if self.rotary_base < 0 or self.local_rotary_base < 0:
            raise ConfigError("rotary_base and local_rotary_base must not be negative.")
        if self.rotary_base and self.head_size % 2:
            raise ConfigError(
                f"Rotary positions rotate pairs of dimensions: the head size {self.head_size} "
                "must be even."
            )
        if self.local_attention_window < 0 or self.global_attention_interval < 1:
            raise ConfigError(
                f"local_attention_window ({self.local_attention_window}) must not be negative "
                f"and global_attention_interval ({self.global_attention_interval}) positive."
            )
        if self.local_attention_window and self.num_layer_groups is not None:
            raise ConfigError(
                "Local attention (local_attention_window) in layers that share their weights "
                "(num_layer_groups) is not supported."
            )

    @property
    def attention_windows(self) -> list[int]:
        """For each layer, how far its tokens see: 0 where it attends globally, else half the
        local window (ModernBERT: global, 64, 64, global, ...).

        Example:
        >>> BertConfig.preset("tiny", num_layers=4, local_attention_window=16,
        ...                   global_attention_interval=3).attention_windows
        [0, 8, 8, 0]
        """
        half_window = self.local_attention_window // 2
        return [
            half_window if layer % self.global_attention_interval else 0
            for layer in range(self.num_layers)
        ]

    @property
    def rotary_bases(self) -> list[float]:
        """For each layer, the base of its rotary positions (0: none): the local one in
        local-attention layers."""
        return [
            (self.local_rotary_base or self.rotary_base) if window else self.rotary_base
            for window in self.attention_windows
        ]

    @property
    def head_size(self) -> int:
        """Dimensions per attention head."""
        return self.hidden_size // self.num_heads

    @property
    def relative_attention_terms(self) -> tuple[str, ...]:
        """The disentangled attention terms of `pos_att_type`, e.g. `("p2c", "c2p")`."""
        return tuple(term.strip() for term in self.pos_att_type.lower().split("|") if term.strip())

    @property
    def relative_position_range(self) -> int:
        """The distance DeBERTa's log buckets reach (`max_relative_positions`, or
        `max_position_embeddings` where that is below 1, as Hugging Face reads it)."""
        if self.max_relative_positions < 1:
            return self.max_position_embeddings
        return self.max_relative_positions

    @property
    def relative_attention_span(self) -> int:
        """Relative embeddings on each side of distance 0 (half the table's rows)."""
        return self.position_buckets if self.position_buckets > 0 else self.relative_position_range

    @property
    def longest_input(self) -> int:
        """The most ids a packed input may hold: the learned positions less RoBERTa's offset
        (DeBERTa-v3's relative positions: the `max_position_embeddings` they were bucketed
        for)."""
        return self.max_position_embeddings - self.position_offset

    @property
    def positions_bound_inputs(self) -> bool:
        """Whether a packed input may hold no more than `longest_input` tokens: learned
        positions, and ModernBERT's rotary ones (computed for that many); DeBERTa-v3's relative
        positions have no such limit."""
        return self.position_biased_input or bool(self.rotary_base)

    @property
    def positions_are_columns(self) -> bool:
        """Whether a token's position is its column (BERT's learned positions, ModernBERT's
        rotary ones), so that no input may be wider than `longest_input`. RoBERTa's count
        real tokens (padding past them costs no position); DeBERTa-v3's are relative."""
        return bool(self.rotary_base) or (self.position_biased_input and not self.position_offset)

    def check_seq_length(self, seq_length: int) -> None:
        """Raises a `ConfigError` for packed inputs longer than the positions the model reads
        (`longest_input`, where `positions_bound_inputs`).

        Example:
        >>> config = BertConfig.preset("tiny", max_position_embeddings=64)
        >>> try:
        ...     config.check_seq_length(128)
        ... except ConfigError as error:
        ...     print(str(error).split(":")[0])
        seq_length 128 is longer than the 64 tokens this bert model reads
        """
        if self.positions_bound_inputs and seq_length > self.longest_input:
            raise ConfigError(
                f"seq_length {seq_length} is longer than the {self.longest_input} tokens this "
                f"{self.model_type} model reads: use seq_length {self.longest_input} or less "
                "(longer texts are cut to it)."
            )

    def replace(self, **changes: Any) -> BertConfig:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    # Serialization -------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> BertConfig:
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"Unknown BertConfig fields: {', '.join(unknown)}.")
        return cls(**values)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> BertConfig:
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_json_file(cls, path: str | Path) -> BertConfig:
        """Reads our JSON, a Hugging Face `config.json` or an original `bert_config.json`."""
        path = Path(path)
        try:
            values = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise FileNotFoundError(f"No BERT config file at {path}.") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ConfigError(f"{path} is not a JSON config file: {error}") from None
        if not isinstance(values, dict):
            raise ConfigError(f"{path} holds JSON but not an object of config fields.")
        layer_count_fields = {
            theirs
            for record in FAMILIES.values()
            for theirs, ours in record.config_fields.items()
            if ours == "num_layers"
        }
        if layer_count_fields.intersection(values):
            return cls.from_original_dict(values)
        return cls.from_dict(values)

    @classmethod
    def from_original_dict(cls, values: dict[str, Any]) -> BertConfig:
        """From the field names of Google's `bert_config.json` and Hugging Face's `config.json`.

        Both use the same names (`hidden_size`, `num_hidden_layers`, `hidden_act`, ...); Hugging
        Face adds `layer_norm_eps` (the original code fixed 1e-12). `hidden_act: "gelu"` is read
        as the exact erf GELU, as Hugging Face reads it; Google's TF1 code computed it with the
        tanh approximation, which `replace(hidden_activation="gelu_approximate")` reproduces.
        Hugging Face's `model_type` picks the family: RoBERTa counts positions from its padding
        id + 1; DistilBERT names its fields otherwise and has no token types and no pooler;
        DeBERTa (`deberta-v2`) has no pooler in its encoder and reads its relative-attention
        fields (`pos_att_type` as a list or a "|"-separated string).
        """
        model_type = values.get("model_type", "bert")
        record = family(model_type)
        if record.flat_config is not None:
            values = record.flat_config(values)
        if values.get("position_embedding_type", "absolute") != "absolute" or values.get(
            "sinusoidal_pos_embds"
        ):
            raise ConfigError("Only absolute (learned) position embeddings are supported.")
        if record.check_config is not None:
            record.check_config(values)
        names = record.config_fields
        fields = {ours: values[theirs] for theirs, ours in names.items() if theirs in values}
        missing = [
            theirs for theirs, ours in names.items() if ours in _REQUIRED and theirs not in values
        ]
        if missing:
            raise ConfigError(f"{model_type} config is missing the field {missing[0]!r}.")
        activation = fields.get("hidden_activation", "gelu")
        if activation not in _HF_ACTIVATIONS:
            raise ConfigError(
                f"Unsupported hidden_act {activation!r}; supported: {', '.join(_HF_ACTIVATIONS)}."
            )
        fields["hidden_activation"] = _HF_ACTIVATIONS[activation]
        if isinstance(fields.get("pos_att_type"), list):
            fields["pos_att_type"] = "|".join(fields["pos_att_type"])
        return cls(**{**record.config_defaults(values), **fields, "model_type": model_type})

    def to_original_dict(self) -> dict[str, Any]:
        """The field names of `bert_config.json` / Hugging Face `config.json`."""
        return {
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "num_hidden_layers": self.num_layers,
            "num_attention_heads": self.num_heads,
            "intermediate_size": self.intermediate_size,
            "hidden_act": _WRITTEN_ACTIVATIONS[self.hidden_activation],
            "hidden_dropout_prob": self.dropout_rate,
            "attention_probs_dropout_prob": self.attention_dropout_rate,
            "max_position_embeddings": self.max_position_embeddings,
            "type_vocab_size": self.type_vocab_size,
            "initializer_range": self.initializer_range,
            "layer_norm_eps": self.layer_norm_epsilon,
            **({"pre_layer_norm": True} if self.pre_layer_norm else {}),
            **(
                {
                    "relative_attention_buckets": self.relative_attention_buckets,
                    "local_attention_bias": self.local_attention_bias,
                }
                if self.relative_attention_buckets
                else {}
            ),
            # Beyond BERT's fields, only where they differ from BERT's.
            **({"model_type": self.model_type} if self.model_type != "bert" else {}),
            **({"position_offset": self.position_offset} if self.position_offset else {}),
            **({"pooler": False} if not self.pooler else {}),
            **({"embedding_size": self.embedding_size} if self.embedding_size else {}),
            **(
                {
                    "num_hidden_groups": self.num_layer_groups,
                    "inner_group_num": self.inner_group_num,
                }
                if self.num_layer_groups
                else {}
            ),  # fmt: skip
            **{name: getattr(self, name) for name in family(self.model_type).extra_config_fields},
        }

    def to_huggingface_dict(self) -> dict[str, Any]:
        """The `config.json` of its family's transformers config class: `model_type` and the
        fields that class has, under its names (`pad_token_id` where positions count from it).

        Raises:
            ConfigError: the config has values that class cannot hold (keras_bert's own fields,
                such as `pre_layer_norm`, or fields another family has): transformers would build
                another model.

        Example:
        >>> config = BertConfig.preset("tiny", model_type="distilbert", type_vocab_size=0)
        >>> values = config.to_huggingface_dict()
        >>> values["model_type"], values["dim"], values["n_layers"], "pooler" in values
        ('distilbert', 128, 2, False)
        >>> BertConfig.preset("tiny", pre_layer_norm=True).to_huggingface_dict()
        Traceback (most recent call last):
        ...
        keras_bert.errors.ConfigError: transformers' bert config cannot hold pre_layer_norm=True.
        """
        record = family(self.model_type)
        # transformers' configs of factorized embeddings always hold their width (ALBERT's,
        # ELECTRA's): H where the embeddings are not factorized.
        written = self.replace(embedding_size=self.embedding_size or self.hidden_size)
        ours = written.to_dict() | {
            "hidden_activation": _WRITTEN_ACTIVATIONS[self.hidden_activation],
            "pos_att_type": list(self.relative_attention_terms),
        }
        values: dict[str, Any] = {"model_type": self.model_type}
        for theirs, field in record.config_fields.items():
            if theirs in record.transformers_config_fields:
                values[theirs] = ours[field]
        if record.positions_after_padding:
            values["pad_token_id"] = self.position_offset - 1
        read_back = BertConfig.from_original_dict(values)
        # Whether the encoder has a pooler is read from its tensors, not its config.
        if "embedding_size" not in record.transformers_config_fields:
            written = self
        lost = [
            f"{field.name}={getattr(self, field.name)!r}"
            for field in dataclasses.fields(self)
            if field.name != "pooler"
            and getattr(read_back, field.name) != getattr(written, field.name)
        ]
        if lost:
            raise ConfigError(
                f"transformers' {self.model_type} config cannot hold {', '.join(lost)}."
            )
        return values

    @property
    def layer_groups(self) -> list[int]:
        """For each of the `num_layers` layers, the index of the group of blocks it runs
        (ALBERT's mapping; layer i has its own blocks without sharing)."""
        if self.num_layer_groups is None:
            return list(range(self.num_layers))
        return [
            int(layer / (self.num_layers / self.num_layer_groups))
            for layer in range(self.num_layers)
        ]

    def num_parameters(self) -> int:
        """Weights of a `BertEncoder` of this config: embeddings (ALBERT's factorized ones and
        their projection, DeBERTa's relative table), the blocks it owns (ALBERT's groups are
        shared by several layers; ModernBERT's have no biases, a gated feed-forward and no
        LayerNorm before the first attention), the final LayerNorm of pre-LN blocks, and the
        pooler.

        Example:
        >>> albert_base = BertConfig.preset(
        ...     "base", model_type="albert", vocab_size=30000, embedding_size=128,
        ...     num_layer_groups=1,
        ... )
        >>> round(albert_base.num_parameters() / 1e6, 1)
        11.7
        """
        hidden, intermediate = self.hidden_size, self.intermediate_size
        embedding_width = self.embedding_size or hidden
        positions = self.max_position_embeddings if self.position_biased_input else 0
        rows = self.vocab_size + positions + self.type_vocab_size
        layer_norm_weights = 2 if self.layer_norm_bias else 1  # gamma, and beta if it has one
        layer_norm = layer_norm_weights * hidden
        embeddings = rows * embedding_width + layer_norm_weights * embedding_width
        if embedding_width != hidden:  # the projection of factorized embeddings to H
            embeddings += embedding_width * hidden + hidden
        if self.relative_attention:  # DeBERTa's relative embeddings (and their LayerNorm)
            embeddings += 2 * self.relative_attention_span * hidden
            embeddings += 2 * hidden if self.norm_rel_ebd == "layer_norm" else 0
        bias = hidden if self.dense_bias else 0
        dense = hidden * hidden + bias
        if self.relative_attention:  # DeBERTa's attention, with or without its own projections
            own_projections = 0 if self.share_att_key else len(set(self.relative_attention_terms))
            attention = (4 + own_projections) * dense
        else:  # BERT's, with T5's learned bias per bucket and head where it has one
            attention = 4 * dense + self.relative_attention_buckets * self.num_heads
        gated = 2 if self.gated_feed_forward else 1
        feed_forward = gated * intermediate * (hidden + (1 if self.dense_bias else 0))
        feed_forward += intermediate * hidden + bias
        block = attention + layer_norm + feed_forward + layer_norm
        shared = self.num_layer_groups is not None
        blocks = len(set(self.layer_groups)) * (self.inner_group_num if shared else 1)
        # ModernBERT's first block reads the embeddings' LayerNorm.
        unnormalized_first = (
            self.pre_layer_norm and not family(self.model_type).first_block_attention_norm
        )
        final_layer_norm = layer_norm if self.pre_layer_norm else 0
        pooler = hidden * hidden + hidden if self.pooler else 0
        return (
            embeddings
            + blocks * block
            - (layer_norm if unnormalized_first else 0)
            + final_layer_norm
            + pooler
        )

    # Presets -------------------------------------------------------------------------------

    @classmethod
    def preset(cls, name: str, **changes: Any) -> BertConfig:
        """The config of a standard size (see `PRESETS`), for a randomly initialised model.

        Pretrained weights come from `from_checkpoint`; a random model of a named size is
        `BertEncoder(BertConfig.preset(name))`.

        Example:
        >>> config = BertConfig.preset("base")
        >>> config.num_layers, config.hidden_size, round(config.num_parameters() / 1e6, 1)
        (12, 768, 109.5)
        """
        if name not in PRESETS:
            raise ConfigError(f"Unknown preset {name!r}; expected one of {', '.join(PRESETS)}.")
        return cls(**{**PRESETS[name].sizes, **changes})


class Preset(NamedTuple):
    """A standard model size: its config fields and what it is."""

    sizes: dict[str, int]
    description: str


def _preset(num_layers: int, hidden_size: int, num_heads: int, description: str) -> Preset:
    sizes = {
        "num_layers": num_layers,
        "hidden_size": hidden_size,
        "num_heads": num_heads,
        "intermediate_size": 4 * hidden_size,
    }
    return Preset(sizes, description)


# The sizes of Google's released BERT models (the small ones from "Well-Read Students Learn
# Better", Turc et al. 2019, with 64-dimensional heads). Parameter counts (`describe_presets`)
# are for the 30,522-piece uncased vocabulary.
PRESETS: dict[str, Preset] = {
    "tiny": _preset(2, 128, 2, "BERT-Tiny, L2/H128/A2: tests and quick experiments"),
    "mini": _preset(4, 256, 4, "BERT-Mini, L4/H256/A4: pretraining on a CPU"),
    "small": _preset(4, 512, 8, "BERT-Small, L4/H512/A8"),
    "medium": _preset(8, 512, 8, "BERT-Medium, L8/H512/A8"),
    "base": _preset(12, 768, 12, "BERT-Base, L12/H768/A12: the paper's main model"),
    "large": _preset(24, 1024, 16, "BERT-Large, L24/H1024/A16"),
}


def describe_presets() -> dict[str, str]:
    """Each preset's description with its parameter count.

    Example:
    >>> describe_presets()["tiny"]
    'BERT-Tiny, L2/H128/A2: tests and quick experiments (4.4M parameters)'
    """
    return {
        name: f"{preset.description} ({BertConfig.preset(name).num_parameters() / 1e6:.1f}M "
        "parameters)"
        for name, preset in PRESETS.items()
    }
