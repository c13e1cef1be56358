"""BERT's masked-LM head: transform, LayerNorm and a decoder tied to the token embeddings."""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops

from keras_bert.layers.activations import activation_from_name
from keras_bert.layers.layer_normalization import FastLayerNormalization
from keras_bert.layers.sequence_dense import SequenceDense


def vectors_at(sequence_output: tf.Tensor, positions: tf.Tensor) -> tf.Tensor:
    """The `[batch, positions, hidden]` vectors of `sequence_output` `[batch, sequence, hidden]`
    at `positions` `[batch, positions]`.

    One batched gather on int32 indices: `ops.take_along_axis` along the sequence axis builds
    int64 transposes around it, which oneDNN declines on CPUs without AVX-512, logging an error.

    Example:
    >>> vectors_at(tf.reshape(tf.range(6.0), [1, 3, 2]), [[2, 0]]).numpy().tolist()
    [[[4.0, 5.0], [0.0, 1.0]]]
    """
    return tf.gather(sequence_output, ops.cast(positions, "int32"), batch_dims=1)


class TiedDecoderHead(keras.layers.Layer):
    """The base of heads that predict tokens: transforms (dense → activation → LayerNorm) made
    by `transform`, and a decoder tied to the token embeddings plus an output bias of its own.

    Args:
        token_embedding: the encoder's `keras.layers.Embedding` to tie the decoder to.
        hidden_activation: activation of the transforms ("gelu", "gelu_approximate", "relu").
        layer_norm_epsilon: LayerNorm epsilon.
        initializer_range: standard deviation of the truncated-normal initializer.
        use_bias: whether the transforms' dense layers have biases (ModernBERT's have none).
        layer_norm_bias: whether their LayerNorms have a bias.
    """

    def __init__(
        self,
        token_embedding: keras.layers.Embedding,
        hidden_activation: str = "gelu",
        layer_norm_epsilon: float = 1e-12,
        initializer_range: float = 0.02,
        use_bias: bool = True,
        layer_norm_bias: bool = True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.token_embedding = token_embedding
        self.hidden_activation = hidden_activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.use_bias = use_bias
        self.layer_norm_bias = layer_norm_bias

    @property
    def vocabulary_size(self) -> int:
        return self.token_embedding.input_dim

    def initializer(self) -> keras.initializers.Initializer:
        return keras.initializers.TruncatedNormal(stddev=self.initializer_range)

    def transform(
        self, name: str, layer_norm_name: str
    ) -> tuple[SequenceDense, FastLayerNormalization]:
        """A dense layer to the embedding width (ALBERT's factorized E; H for BERT) with the
        head's activation, and its LayerNorm."""
        dense = SequenceDense(
            self.token_embedding.output_dim,
            activation=activation_from_name(self.hidden_activation, self.dtype_policy),
            use_bias=self.use_bias,
            kernel_initializer=self.initializer(),
            dtype=self.dtype_policy,
            name=name,
        )
        layer_norm = FastLayerNormalization(
            epsilon=self.layer_norm_epsilon,
            center=self.layer_norm_bias,
            dtype=self.dtype_policy,
            name=layer_norm_name,
        )
        return dense, layer_norm

    def build_decoder(self) -> None:
        """Creates the output bias (after the transforms are built, as saved models expect)."""
        if not self.token_embedding.built:
            self.token_embedding.build((None,))
        self.output_bias = self.add_weight(
            shape=(self.vocabulary_size,),
            initializer="zeros",
            # Read in float32: it is added after the logits are cast to float32.
            autocast=False,
            name="output_bias",
        )

    def decode(self, hidden) -> tf.Tensor:
        """float32 vocabulary logits of `[batch, predictions, width]` vectors."""
        batch_size, predictions = ops.shape(hidden)[0], ops.shape(hidden)[1]
        # One 2-D matmul with the table as its transposed operand: its gradient comes out
        # [vocabulary, width] directly, where a batched einsum would broadcast the table and
        # reduce a [batch, vocabulary, width] gradient over the batch.
        flat = ops.reshape(hidden, (-1, ops.shape(hidden)[-1]))
        table = ops.cast(self.token_embedding.embeddings, flat.dtype)
        logits = tf.linalg.matmul(flat, table, transpose_b=True)
        # Softmax over a large vocabulary is computed in float32 under mixed precision.
        bias = ops.cast(self.output_bias, "float32")  # bfloat16 under a bfloat16 policy
        logits = tf.nn.bias_add(ops.cast(logits, "float32"), bias)
        return ops.reshape(logits, (batch_size, predictions, self.vocabulary_size))

    def compute_output_shape(self, sequence_output_shape, masked_positions_shape):
        return tuple(masked_positions_shape) + (self.vocabulary_size,)

    def get_config(self):
        return {
            **super().get_config(),
            "token_embedding": keras.layers.serialize(self.token_embedding),
            "hidden_activation": self.hidden_activation,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "initializer_range": self.initializer_range,
            "use_bias": self.use_bias,
            "layer_norm_bias": self.layer_norm_bias,
        }

    @classmethod
    def from_config(cls, config):
        # A head restored on its own owns a copy of the table; inside `BertPretrainer` the model
        # rebuilds the head tied to its encoder.
        config = dict(config)
        config["token_embedding"] = keras.layers.deserialize(config["token_embedding"])
        return cls(**config)


@keras.saving.register_keras_serializable(package="keras_bert")
class MaskedLMHead(TiedDecoderHead):
    """Predicts the tokens at masked positions: dense → activation → LayerNorm → logits.

    Only the `[batch, predictions]` positions in `masked_positions` are gathered and decoded,
    so the vocabulary-sized matmul costs `predictions` rows, not the whole sequence. The decoder
    is the transpose of the token embedding table (tied weights) plus an output bias.

    Args:
        token_embedding: the encoder's `keras.layers.Embedding` to tie the decoder to.
        hidden_activation: activation of the transform ("gelu", "gelu_approximate", "relu").
        layer_norm_epsilon: LayerNorm epsilon.
        initializer_range: standard deviation of the truncated-normal initializer.

    Call args:
        sequence_output: float `[batch, sequence, hidden]`.
        masked_positions: int `[batch, predictions]` indices into the sequence.

    Returns:
        float32 logits `[batch, predictions, vocabulary_size]`.

    Example:
    >>> import numpy as np
    >>> embedding = keras.layers.Embedding(50, 8)
    >>> embedding.build((None,))
    >>> head = MaskedLMHead(embedding)
    >>> tuple(head(np.ones((2, 6, 8)), np.array([[1, 4], [0, 0]])).shape)
    (2, 2, 50)
    """

    def __init__(self, token_embedding: keras.layers.Embedding, **kwargs):
        super().__init__(token_embedding, **kwargs)
        self.dense, self.layer_norm = self.transform("dense", "layer_norm")

    def build(self, sequence_output_shape, masked_positions_shape=None):
        self.dense.build((None, sequence_output_shape[-1]))
        self.layer_norm.build((None, self.token_embedding.output_dim))
        self.build_decoder()
        self.built = True

    def call(self, sequence_output, masked_positions):
        gathered = vectors_at(sequence_output, masked_positions)
        return self.decode(self.layer_norm(self.dense(gathered)))
