"""Every layer and model under float32, mixed_bfloat16 and mixed_float16."""

import keras
import numpy as np
import pytest

from keras_bert import BertConfig, BertEncoder
from keras_bert.layers import (
    BertEmbeddings,
    BertPooler,
    MultiHeadSelfAttention,
    TransformerEncoderBlock,
)
from keras_bert.layers.dropout import FastDropout
from keras_bert.layers.gated_linear_unit import GatedLinearUnit
from keras_bert.layers.layer_normalization import FastLayerNormalization
from keras_bert.layers.masked_lm_head import MaskedLMHead
from keras_bert.layers.next_sentence_head import NextSentenceHead
from keras_bert.layers.rotary_embedding import RotaryEmbedding
from keras_bert.layers.span_boundary_head import SpanBoundaryHead
from keras_bert.layers.windowed_attention import WindowedSelfAttention
from keras_bert.models import BertClassifier, BertQuestionAnswerer, BertTokenClassifier
from keras_bert.models.pretrainer import BertPretrainer
from tests.layers.test_modernbert_layers import MODERNBERT_BLOCK
from tests.precision_checks import check_precision

RNG = np.random.default_rng(0)
HIDDEN = RNG.normal(size=(2, 5, 16)).astype("float32")
MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], "int32")
CONFIG = BertConfig.preset(
    "tiny", vocab_size=50, max_position_embeddings=32, dropout_rate=0.0, attention_dropout_rate=0.0
)


def encoder_inputs(seq_length: int) -> dict:
    lengths = np.array([seq_length, max(2, seq_length // 2)])
    mask = (np.arange(seq_length)[None] < lengths[:, None]).astype("int32")
    word_ids = RNG.integers(5, 50, size=(2, seq_length)).astype("int32") * mask
    return {"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": 0 * mask}


def _token_embedding(dtype):
    embedding = keras.layers.Embedding(30, 16, dtype=dtype, name="token_embedding")
    embedding.build((None,))
    return embedding


LAYERS = {
    "embeddings": (
        lambda dtype: BertEmbeddings(50, 2, 16, 16, dropout_rate=0.0, dtype=dtype),
        (RNG.integers(0, 50, (2, 5)).astype("int32"), np.zeros((2, 5), "int32")),
    ),
    "self_attention": (
        lambda dtype: MultiHeadSelfAttention(16, 4, attention_dropout_rate=0.0, dtype=dtype),
        (HIDDEN, MASK),
    ),
    "encoder_block": (
        lambda dtype: TransformerEncoderBlock(
            16, 4, 32, dropout_rate=0.0, attention_dropout_rate=0.0, dtype=dtype
        ),
        (HIDDEN, MASK),
    ),
    "pre_layer_norm_block": (
        lambda dtype: TransformerEncoderBlock(
            16,
            4,
            32,
            dropout_rate=0.0,
            attention_dropout_rate=0.0,
            pre_layer_norm=True,
            dtype=dtype,
        ),
        (HIDDEN, MASK),
    ),  # fmt: skip
    "modernbert_block": (
        lambda dtype: TransformerEncoderBlock(16, 4, 24, **MODERNBERT_BLOCK, dtype=dtype),
        (HIDDEN, MASK),
    ),  # fmt: skip
    "windowed_attention": (
        lambda dtype: WindowedSelfAttention(
            16, 4, attention_window=1, attention_dropout_rate=0.0, dtype=dtype
        ),
        (HIDDEN, MASK),
    ),
    "rotary_embedding": (
        lambda dtype: RotaryEmbedding(4, 160_000.0, dtype=dtype),
        (HIDDEN.reshape(2, 5, 4, 4),),
    ),
    "gated_linear_unit": (lambda dtype: GatedLinearUnit(dtype=dtype), (HIDDEN,)),
    "pooler": (lambda dtype: BertPooler(16, dtype=dtype), (HIDDEN,)),
    "layer_normalization": (lambda dtype: FastLayerNormalization(dtype=dtype), (HIDDEN,)),
    "dropout": (lambda dtype: FastDropout(0.1, dtype=dtype), (HIDDEN,)),
    "masked_lm_head": (
        lambda dtype: MaskedLMHead(_token_embedding(dtype), dtype=dtype),
        (HIDDEN, np.array([[1, 4], [0, 2]], "int32")),
    ),
    "next_sentence_head": (lambda dtype: NextSentenceHead(dtype=dtype), (HIDDEN[:, 0],)),
    "span_boundary_head": (
        lambda dtype: SpanBoundaryHead(_token_embedding(dtype), dtype=dtype),
        (HIDDEN, np.array([[1, 2], [0, 2]], "int32")),
    ),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_precision(name, tmp_path):
    build, inputs = LAYERS[name]
    check_precision(build, inputs, tmp_path)


# What DeBERTa-v3 and ModernBERT share: no token types, no pooler, no absolute positions.
WITHOUT_TYPES_POOLER_POSITIONS = CONFIG.replace(
    type_vocab_size=0, pooler=False, position_biased_input=False
)

# DeBERTa-v3's settings (relative positions bucketed beyond 4 tokens, as 256 buckets do beyond 128).
DEBERTA_CONFIG = WITHOUT_TYPES_POOLER_POSITIONS.replace(
    model_type="deberta-v2",
    relative_attention=True,
    position_buckets=8,
    pos_att_type="p2c|c2p",
    share_att_key=True,
    norm_rel_ebd="layer_norm",
)


# ModernBERT's settings: a global layer, then one within a window of 4 tokens each side.
MODERNBERT_CONFIG = WITHOUT_TYPES_POOLER_POSITIONS.replace(
    model_type="modernbert",
    pre_layer_norm=True,
    gated_feed_forward=True,
    dense_bias=False,
    layer_norm_bias=False,
    rotary_base=160_000.0,
    local_rotary_base=10_000.0,
    local_attention_window=8,
    global_attention_interval=2,
)


@pytest.mark.parametrize(
    "config",
    [CONFIG, DEBERTA_CONFIG, MODERNBERT_CONFIG],
    ids=["bert", "deberta", "modernbert"],
)
@pytest.mark.parametrize("seq_length", [4, 17, 32])
def test_encoder_precision_at_several_lengths(config, seq_length, tmp_path):
    check_precision(
        lambda dtype: BertEncoder(config, dtype=dtype), encoder_inputs(seq_length), tmp_path
    )


MODELS = {
    "classifier": lambda dtype: BertClassifier(
        BertEncoder(CONFIG, dtype=dtype), num_classes=3, dropout_rate=0.0
    ),
    "token_classifier": lambda dtype: BertTokenClassifier(
        BertEncoder(CONFIG, dtype=dtype), label_names=["O", "B-x", "I-x"], dropout_rate=0.0
    ),
    "question_answerer": lambda dtype: BertQuestionAnswerer(BertEncoder(CONFIG, dtype=dtype)),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_task_model_precision(name, tmp_path):
    check_precision(MODELS[name], encoder_inputs(8), tmp_path)


def test_pretrainer_precision(tmp_path):
    inputs = {**encoder_inputs(8), "masked_lm_positions": np.array([[1, 2], [3, 1]], "int32")}
    check_precision(lambda dtype: BertPretrainer(CONFIG, dtype=dtype), inputs, tmp_path)
