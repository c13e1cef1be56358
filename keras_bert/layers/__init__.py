"""Keras layers of BERT: embeddings, self-attention (and DeBERTa's disentangled attention over
relative embeddings; ModernBERT's rotary positions and attention within a window), the gate of
a GeGLU feed-forward, encoder block, pooler, pretraining heads (ELECTRA's replaced-token head
among them), and the cut of the padding no row of a batch has."""

from keras_bert.layers.disentangled_attention import DisentangledSelfAttention
from keras_bert.layers.dropout import FastDropout
from keras_bert.layers.embeddings import BertEmbeddings
from keras_bert.layers.encoder_block import TransformerEncoderBlock
from keras_bert.layers.gated_linear_unit import GatedLinearUnit
from keras_bert.layers.gather_embedding import GatherEmbedding
from keras_bert.layers.layer_normalization import FastLayerNormalization
from keras_bert.layers.masked_lm_head import MaskedLMHead
from keras_bert.layers.next_sentence_head import NextSentenceHead
from keras_bert.layers.padding_skip import TrailingPaddingTrim
from keras_bert.layers.pooler import BertPooler
from keras_bert.layers.relative_positions import RelativeEmbeddings
from keras_bert.layers.replaced_token_head import ReplacedTokenHead
from keras_bert.layers.rotary_embedding import RotaryEmbedding
from keras_bert.layers.self_attention import MultiHeadSelfAttention
from keras_bert.layers.sequence_dense import SequenceDense
from keras_bert.layers.sharded_dense import ColumnShardedDense, RowShardedDense
from keras_bert.layers.span_boundary_head import SpanBoundaryHead
from keras_bert.layers.windowed_attention import WindowedSelfAttention

__all__ = [
    "BertEmbeddings",
    "BertPooler",
    "ColumnShardedDense",
    "DisentangledSelfAttention",
    "FastDropout",
    "FastLayerNormalization",
    "GatedLinearUnit",
    "GatherEmbedding",
    "MaskedLMHead",
    "MultiHeadSelfAttention",
    "NextSentenceHead",
    "RelativeEmbeddings",
    "ReplacedTokenHead",
    "RotaryEmbedding",
    "RowShardedDense",
    "SequenceDense",
    "SpanBoundaryHead",
    "TrailingPaddingTrim",
    "TransformerEncoderBlock",
    "WindowedSelfAttention",
]
