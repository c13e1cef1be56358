"""BertEncoder: the BERT encoder as a Keras functional model with TF-Hub style inputs/outputs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import keras

from keras_bert.config import BertConfig
from keras_bert.errors import ConfigError, DataError
from keras_bert.families import family
from keras_bert.layers import BertEmbeddings, BertPooler, TransformerEncoderBlock
from keras_bert.layers.layer_normalization import FastLayerNormalization
from keras_bert.layers.relative_positions import RelativeEmbeddings
from keras_bert.models.functional_config import functional_base_config, set_dtype_policy
from keras_bert.models.input_checks import checked_inputs
from keras_bert.models.text_inputs import holds_text

if TYPE_CHECKING:
    from keras_bert.checkpoints import Checkpoint, CheckpointFiles

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")
# The global attention of models with rotary positions (ModernBERT's, of 8,192 positions) over
# more tokens than this attends in blocks of this many queries: memory for a [block, sequence]
# score matrix per head, not [sequence, sequence] (at 8,192 tokens and 12 heads: 200 MB, not
# 3.2 GB, for each of the scores and their softmax).
QUERY_BLOCK_SIZE = 512


def encoder_inputs(seq_length: int | None = None) -> dict[str, keras.KerasTensor]:
    """Symbolic int32 inputs named as the TensorFlow ecosystem names them."""
    return {
        name: keras.Input(shape=(seq_length,), dtype="int32", name=name) for name in INPUT_NAMES
    }


@keras.saving.register_keras_serializable(package="keras_bert")
class BertEncoder(keras.Model):
    """The BERT encoder: embeddings, a stack of Transformer blocks and the `[CLS]` pooler.

    Takes a dict of int32 tensors `[batch, sequence]`: `input_word_ids` (WordPiece ids),
    `input_mask` (1 for tokens, 0 for padding) and `input_type_ids` (segment ids); returns a dict
    with `sequence_output` `[batch, sequence, hidden]`, `first_token_output` `[batch, hidden]`
    (its first position, computed by itself in the last block: what the heads on `[CLS]` read)
    and `pooled_output` `[batch, hidden]` (families without a pooler have none), and
    with `output_all_layers=True` also `embedding_output` and `encoder_outputs` (one tensor per
    block; with `pre_layer_norm` the sequence output is the last of them after the final
    LayerNorm). The family's settings come from the config: DeBERTa's (`relative_attention`)
    add a relative position table that every block's disentangled attention reads.

    Args:
        config: a `BertConfig` (or its dict form).
        output_all_layers: whether to also return the embedding and every block's output.
        feed_forward_shards: each block's feed-forward weights stored as this many independent
            blocks (see `TransformerEncoderBlock`): a serving layout, the same values; export
            takes it as `serving_module(..., feed_forward_shards=2)`.
        shared_embeddings: another encoder's `BertEmbeddings` to read instead of its own
            (ELECTRA's generator shares its discriminator's, of width
            `embedding_size`, and projects them to its own `hidden_size`). Not part of
            `get_config`: the model that owns both encoders restores the sharing.

    Example:
    >>> import numpy as np
    >>> encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=100))
    >>> outputs = encoder({
    ...     "input_word_ids": np.array([[2, 7, 9, 3]]),
    ...     "input_mask": np.array([[1, 1, 1, 1]]),
    ...     "input_type_ids": np.array([[0, 0, 0, 0]]),
    ... })
    >>> tuple(outputs["sequence_output"].shape), tuple(outputs["pooled_output"].shape)
    ((1, 4, 128), (1, 128))

    With real weights: `BertEncoder.from_checkpoint("path/to/checkpoint_dir")`.
    """

    def __init__(
        self,
        config: BertConfig | dict[str, Any],
        output_all_layers: bool = False,
        feed_forward_shards: int = 1,
        shared_embeddings: BertEmbeddings | None = None,
        **kwargs,
    ):
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        dtype = kwargs.pop("dtype", None)
        record = family(config.model_type)
        embedding_width = config.embedding_size or config.hidden_size
        if shared_embeddings is not None and (
            shared_embeddings.hidden_size,
            shared_embeddings.vocab_size,
        ) != (embedding_width, config.vocab_size):
            raise ConfigError(
                f"Shared embeddings of width {shared_embeddings.hidden_size} over "
                f"{shared_embeddings.vocab_size} tokens do not fit a config of embedding width "
                f"{embedding_width} over {config.vocab_size}."
            )

        # Layers
        embeddings = shared_embeddings
        if embeddings is None:
            embeddings = BertEmbeddings(
                vocab_size=config.vocab_size,
                type_vocab_size=config.type_vocab_size,
                max_position_embeddings=config.max_position_embeddings,
                hidden_size=embedding_width,
                dropout_rate=config.dropout_rate,
                layer_norm_epsilon=config.layer_norm_epsilon,
                initializer_range=config.initializer_range,
                position_offset=config.position_offset,
                absolute_positions=config.position_biased_input,
                zero_padding=record.zero_padding_embeddings,
                layer_norm_bias=config.layer_norm_bias,
                dtype=dtype,
                name="embeddings",
            )
        # DeBERTa: one relative position table, read by every block's attention.
        relative_embeddings = (
            RelativeEmbeddings(
                span=config.relative_attention_span,
                hidden_size=config.hidden_size,
                layer_norm=config.norm_rel_ebd == "layer_norm",
                layer_norm_epsilon=config.layer_norm_epsilon,
                initializer_range=config.initializer_range,
                dtype=dtype,
                name="relative_embeddings",
            )
            if config.relative_attention
            else None
        )
        disentangled_attention = (
            {
                "position_buckets": config.position_buckets,
                "max_relative_positions": config.relative_position_range,
                "pos_att_type": config.pos_att_type,
                "share_att_key": config.share_att_key,
            }
            if config.relative_attention
            else None
        )
        # ALBERT's and ELECTRA's factorized embeddings: width E, projected to H.
        embedding_projection = (
            keras.layers.Dense(
                config.hidden_size,
                kernel_initializer=keras.initializers.TruncatedNormal(
                    stddev=config.initializer_range
                ),
                dtype=dtype,
                name="embedding_projection",
            )
            if config.embedding_size not in (None, config.hidden_size)
            else None
        )
        # One group of blocks per layer (BERT), or groups that layers share (ALBERT). A layer's
        # attention may see a window of its tokens only, with rotary positions of its own base
        # (ModernBERT); layers that share their blocks attend alike.
        shared = config.num_layer_groups is not None
        windows, rotary_bases = config.attention_windows, config.rotary_bases
        block_groups = [
            [
                TransformerEncoderBlock(
                    hidden_size=config.hidden_size,
                    num_heads=config.num_heads,
                    intermediate_size=config.intermediate_size,
                    hidden_activation=config.hidden_activation,
                    dropout_rate=config.dropout_rate,
                    attention_dropout_rate=config.attention_dropout_rate,
                    layer_norm_epsilon=config.layer_norm_epsilon,
                    initializer_range=config.initializer_range,
                    pre_layer_norm=config.pre_layer_norm,
                    relative_attention_buckets=config.relative_attention_buckets,
                    local_attention_bias=config.local_attention_bias,
                    disentangled_attention=disentangled_attention,
                    feed_forward_shards=feed_forward_shards,
                    rotary_base=rotary_bases[group],
                    attention_window=windows[group],
                    gated_feed_forward=config.gated_feed_forward,
                    use_bias=config.dense_bias,
                    layer_norm_bias=config.layer_norm_bias,
                    attention_layer_norm=(
                        group > 0 or record.first_block_attention_norm or not config.pre_layer_norm
                    ),
                    query_block_size=QUERY_BLOCK_SIZE if config.rotary_base else 0,
                    dtype=dtype,
                    name=f"group_{group}_block_{inner}" if shared else f"block_{group}",
                )
                for inner in range(config.inner_group_num if shared else 1)
            ]
            for group in range(max(config.layer_groups) + 1)
        ]
        # Pre-LN blocks leave their sum unnormalized: one LayerNorm after the last.
        final_layer_norm = (
            FastLayerNormalization(
                epsilon=config.layer_norm_epsilon,
                center=config.layer_norm_bias,
                dtype=dtype,
                name="final_layer_norm",
            )
            if config.pre_layer_norm
            else None
        )
        pooler = (
            BertPooler(
                config.hidden_size,
                initializer_range=config.initializer_range,
                dtype=dtype,
                name="pooler",
            )
            if config.pooler
            else None
        )

        # Functional model
        inputs = encoder_inputs()
        padding_mask = inputs["input_mask"]
        hidden_states = embeddings(
            inputs["input_word_ids"], inputs["input_type_ids"], inputs["input_mask"]
        )
        if embedding_projection is not None:
            hidden_states = embedding_projection(hidden_states)
        embedding_output = hidden_states
        relative_inputs = (
            () if relative_embeddings is None else (relative_embeddings(hidden_states),)
        )
        encoder_outputs = []
        for group in config.layer_groups:
            for block in block_groups[group]:
                last_block_input = hidden_states
                hidden_states = block(hidden_states, padding_mask, *relative_inputs)
            encoder_outputs.append(hidden_states)
        if final_layer_norm is not None:
            hidden_states = final_layer_norm(hidden_states)
        # The heads on [CLS] read the last block at that position alone, so the last block also
        # computes it by itself: a graph that reads only `first_token_output` or
        # `pooled_output` (a classifier's training step, its serving signature) runs a sixth
        # of the last block's work.
        first_token = block(last_block_input, padding_mask, *relative_inputs, first_token_only=True)
        if final_layer_norm is not None:
            first_token = final_layer_norm(first_token)
        outputs = {"sequence_output": hidden_states, "first_token_output": first_token[:, 0]}
        if pooler is not None:
            outputs["pooled_output"] = pooler(first_token)
        if output_all_layers:
            outputs["embedding_output"] = embedding_output
            outputs["encoder_outputs"] = encoder_outputs
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        set_dtype_policy(self, dtype)

        # Config
        self.bert_config = config
        self.output_all_layers = output_all_layers
        self.feed_forward_shards = feed_forward_shards
        self.embeddings = embeddings
        self.embedding_projection = embedding_projection
        self.relative_embeddings = relative_embeddings
        self.block_groups = block_groups
        self.blocks = [block for group in block_groups for block in group]
        self.final_layer_norm = final_layer_norm
        self.pooler = pooler

    def _checked(self, inputs: Any) -> Any:
        """Packed ids as `checked_inputs` checks them; texts are a `DataError`, which says how
        to pack them."""
        if holds_text(inputs):
            raise DataError(
                "BertEncoder reads packed ids (input_word_ids, input_mask, input_type_ids), not "
                "texts: pack them with its checkpoint's preprocessor first, "
                "encoder(load_preprocessor(path)(texts))."
            )
        return checked_inputs(inputs, self.bert_config)

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """Packed ids are checked first (`checked_inputs`): an id past a table or a row longer
        than the positions is a `DataError` that says so, not an error of a gather op."""
        return super().__call__(self._checked(inputs), *args, **kwargs)

    def predict(self, x: Any, *args: Any, **kwargs: Any) -> Any:
        """`keras.Model.predict`, on packed ids checked first as a call checks them."""
        return super().predict(self._checked(x), *args, **kwargs)

    @property
    def token_embedding(self) -> keras.layers.Embedding:
        """The token embedding table (the masked-LM head ties its decoder to it)."""
        return self.embeddings.token_embedding

    def get_config(self) -> dict[str, Any]:
        return {
            **functional_base_config(self),
            "config": self.bert_config.to_dict(),
            "output_all_layers": self.output_all_layers,
            "feed_forward_shards": self.feed_forward_shards,
        }

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> BertEncoder:
        return cls(**config)

    @classmethod
    def from_checkpoint(
        cls,
        path: str | Path | CheckpointFiles | Checkpoint,
        output_all_layers: bool = False,
        dtype: str | None = None,
        revision: str | None = None,
        **config_changes: Any,
    ) -> BertEncoder:
        """An encoder with the weights of a pretrained checkpoint.

        Reads a Hugging Face BERT directory (`config.json` + `model.safetensors` or
        `pytorch_model.bin`) or an original Google checkpoint (`bert_config.json` +
        `bert_model.ckpt.*`), from the directory or the checkpoint prefix, a Hub id
        (`bert-base-uncased`, `org/name`; at `revision`, a branch, tag or commit) downloaded
        into the Hugging Face cache, or takes the `CheckpointFiles` found already
        (`keras_bert.checkpoints.find_checkpoint`) or a `Checkpoint` read already. Tensors that
        are missing, unexpected or of the wrong shape are named in the error. `config_changes`
        override config fields that do not change weight shapes, e.g. `dropout_rate=0.2` or
        `hidden_activation="gelu_approximate"`.
        """
        from keras_bert.checkpoints import Checkpoint, find_checkpoint
        from keras_bert.checkpoints.variables import initialize_encoder_weights

        checkpoint = path
        if not isinstance(checkpoint, Checkpoint):
            checkpoint = find_checkpoint(checkpoint, revision).read()
        config = checkpoint.config.replace(**config_changes)
        # Each variable is created from its tensor when the scope ends: none is drawn at
        # random first, so the weights are held once (the file's are memory-mapped).
        with keras.StatelessScope():
            encoder = cls(config, output_all_layers=output_all_layers, dtype=dtype)
            initialize_encoder_weights(encoder, checkpoint)
        return encoder
