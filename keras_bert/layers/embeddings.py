"""BERT's input embeddings: token + segment + learned position, LayerNorm, dropout."""

import keras
from keras import ops

from keras_bert.layers.dropout import FastDropout
from keras_bert.layers.gather_embedding import GatherEmbedding
from keras_bert.layers.layer_normalization import FastLayerNormalization


@keras.saving.register_keras_serializable(package="keras_bert")
class BertEmbeddings(keras.layers.Layer):
    """Sums token, segment and position embeddings, then normalizes and applies dropout.

    Args:
        vocab_size: number of token ids.
        type_vocab_size: number of segment ids; 0 for none (DistilBERT).
        max_position_embeddings: number of learned positions.
        hidden_size: embedding width.
        dropout_rate: dropout after the LayerNorm.
        layer_norm_epsilon: LayerNorm epsilon.
        initializer_range: standard deviation of the truncated-normal initializer.
        position_offset: the position id of the first token; with an offset, positions count
            real tokens only and padding gets `position_offset - 1` (RoBERTa: the padding id
            plus one, as Hugging Face computes them). Needs `input_mask` in `call`.
        absolute_positions: whether to add learned positions (DeBERTa-v3's are relative,
            in its attention).
        zero_padding: whether to zero the normalized embeddings at padding (DeBERTa). Needs
            `input_mask` in `call`.
        layer_norm_bias: whether the LayerNorm has a bias (ModernBERT's has none).

    Example:
    >>> import numpy as np
    >>> layer = BertEmbeddings(vocab_size=100, type_vocab_size=2,
    ...                        max_position_embeddings=16, hidden_size=8)
    >>> ids = np.array([[2, 5, 7, 3]])
    >>> tuple(layer(ids, np.zeros_like(ids)).shape)
    (1, 4, 8)
    """

    def __init__(
        self,
        vocab_size: int,
        type_vocab_size: int,
        max_position_embeddings: int,
        hidden_size: int,
        dropout_rate: float = 0.1,
        layer_norm_epsilon: float = 1e-12,
        initializer_range: float = 0.02,
        position_offset: int = 0,
        absolute_positions: bool = True,
        zero_padding: bool = False,
        layer_norm_bias: bool = True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.type_vocab_size = type_vocab_size
        self.max_position_embeddings = max_position_embeddings
        self.hidden_size = hidden_size
        self.dropout_rate = dropout_rate
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.position_offset = position_offset
        self.absolute_positions = absolute_positions
        self.zero_padding = zero_padding
        self.layer_norm_bias = layer_norm_bias

        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)

        def table(rows: int, name: str) -> GatherEmbedding:
            # The lookups and their sum stay float32 under mixed precision (LayerNorm computes
            # in float32 and casts its output): this gathers rows instead of casting tables.
            return GatherEmbedding(
                rows,
                hidden_size,
                embeddings_initializer=initializer,
                dtype=self.dtype_policy,
                autocast=False,
                name=name,
            )

        self.token_embedding = table(vocab_size, "token_embedding")
        self.segment_embedding = (
            table(type_vocab_size, "segment_embedding") if type_vocab_size else None
        )
        self.position_embedding = (
            table(max_position_embeddings, "position_embedding") if absolute_positions else None
        )
        self.layer_norm = FastLayerNormalization(
            epsilon=layer_norm_epsilon,
            center=layer_norm_bias,
            dtype=self.dtype_policy,
            name="layer_norm",
        )
        self.dropout = FastDropout(dropout_rate, dtype=self.dtype_policy)

    def build(self, word_ids_shape, type_ids_shape=None, input_mask_shape=None):
        self.token_embedding.build(word_ids_shape)
        if self.segment_embedding is not None:
            self.segment_embedding.build(word_ids_shape)
        if self.position_embedding is not None:
            self.position_embedding.build(word_ids_shape)
        self.layer_norm.build(tuple(word_ids_shape) + (self.hidden_size,))
        self.built = True

    def call(self, word_ids, type_ids, input_mask=None, training=None):
        embeddings = self.token_embedding(word_ids)
        if self.segment_embedding is not None:
            embeddings = embeddings + self.segment_embedding(type_ids)
        if self.position_embedding is not None:
            positions = self.position_ids(word_ids, input_mask)
            embeddings = embeddings + self.position_embedding(positions)
        embeddings = self.layer_norm(embeddings)
        if self.zero_padding:
            embeddings = embeddings * ops.cast(input_mask, embeddings.dtype)[:, :, None]
        return self.dropout(embeddings, training=training)

    def rescale(self, rms: float) -> float:
        """Scales every table by one factor so that the token table's root mean square is
        `rms`; returns the factor. Fine-tuning's switch `FinetuningConfig.embedding_rms`.

        The layer's output does not change (its LayerNorm follows the sum, up to its epsilon).
        What changes is how far an optimizer step moves the tables relative to their size:
        Adam's steps have about the same size whatever a weight's scale, so tables that
        pretraining grew (a budget run here: RMS 0.088, from 0.02 at initialisation) fine-tune
        several times slower than a random model's. (A checkpoint's tables, written so:
        `keras_bert.pretraining.embedding_scale`.)

        Example:
        >>> import numpy as np
        >>> layer = BertEmbeddings(vocab_size=100, type_vocab_size=2,
        ...                        max_position_embeddings=16, hidden_size=8)
        >>> ids = np.array([[2, 5, 7, 3]])
        >>> before = layer(ids, np.zeros_like(ids))
        >>> factor = layer.rescale(0.01)
        >>> round(float(np.sqrt(np.mean(layer.token_embedding.embeddings.numpy() ** 2))), 4)
        0.01
        >>> bool(np.allclose(before, layer(ids, np.zeros_like(ids)), atol=1e-4))
        True
        """
        if rms <= 0:
            raise ValueError(f"rms must be positive, got {rms}.")
        token_table = self.token_embedding.embeddings
        factor = rms / float(ops.sqrt(ops.mean(ops.square(token_table))))
        for embedding in (self.token_embedding, self.segment_embedding, self.position_embedding):
            if embedding is not None:
                embedding.embeddings.assign(embedding.embeddings * factor)
        return factor

    def position_ids(self, word_ids, input_mask):
        """The position of each token: 0, 1, ... (`[1, sequence]`), or with `position_offset`
        the count of real tokens up to it from the offset, padding `position_offset - 1`
        (`[batch, sequence]`). The ONNX export writes the same rule (a test compares them).

        Example:
        >>> import numpy as np
        >>> layer = BertEmbeddings(vocab_size=100, type_vocab_size=0,
        ...                        max_position_embeddings=16, hidden_size=8, position_offset=2)
        >>> layer.position_ids(np.ones((1, 4)), np.array([[1, 1, 1, 0]])).numpy().tolist()
        [[2, 3, 4, 1]]
        """
        if self.position_offset:
            real = ops.cast(input_mask, "int32")
            return ops.cumsum(real, axis=1) * real + (self.position_offset - 1)
        sequence_length = ops.shape(word_ids)[1]
        return ops.expand_dims(ops.arange(sequence_length, dtype="int32"), 0)

    def compute_output_shape(self, word_ids_shape, type_ids_shape=None, input_mask_shape=None):
        return tuple(word_ids_shape) + (self.hidden_size,)

    def get_config(self):
        return {
            **super().get_config(),
            "vocab_size": self.vocab_size,
            "type_vocab_size": self.type_vocab_size,
            "max_position_embeddings": self.max_position_embeddings,
            "hidden_size": self.hidden_size,
            "dropout_rate": self.dropout_rate,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "initializer_range": self.initializer_range,
            "position_offset": self.position_offset,
            "absolute_positions": self.absolute_positions,
            "zero_padding": self.zero_padding,
            "layer_norm_bias": self.layer_norm_bias,
        }
