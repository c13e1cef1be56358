"""Keras layers of BERT: embeddings, self-attention, encoder block, pooler, pretraining heads."""

from keras_bert.layers.dropout import FastDropout
from keras_bert.layers.embeddings import BertEmbeddings
from keras_bert.layers.encoder_block import TransformerEncoderBlock
from keras_bert.layers.layer_normalization import FastLayerNormalization
from keras_bert.layers.masked_lm_head import MaskedLMHead
from keras_bert.layers.next_sentence_head import NextSentenceHead
from keras_bert.layers.pooler import BertPooler
from keras_bert.layers.self_attention import MultiHeadSelfAttention
from keras_bert.layers.span_boundary_head import SpanBoundaryHead

__all__ = [
    "BertEmbeddings",
    "BertPooler",
    "FastDropout",
    "FastLayerNormalization",
    "MaskedLMHead",
    "MultiHeadSelfAttention",
    "NextSentenceHead",
    "SpanBoundaryHead",
    "TransformerEncoderBlock",
]
