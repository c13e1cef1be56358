import keras
import numpy as np

from keras_bert.layers.masked_lm_head import MaskedLMHead
from keras_bert.layers.next_sentence_head import NextSentenceHead
from tests.layer_checks import check_layer

SEQUENCE = np.random.default_rng(0).normal(size=(2, 6, 16)).astype("float32")
POSITIONS = np.array([[1, 4, 0], [5, 2, 2]], "int32")


def _embedding(vocab_size=30, hidden_size=16):
    embedding = keras.layers.Embedding(vocab_size, hidden_size, name="token_embedding")
    embedding.build((None,))
    return embedding


def test_masked_lm_head(tmp_path):
    head = MaskedLMHead(_embedding())
    check_layer(head, (SEQUENCE, POSITIONS), tmp_path, expected_shapes=(2, 3, 30))


def test_masked_lm_head_decodes_only_the_masked_positions_with_the_tied_table():
    embedding = _embedding()
    head = MaskedLMHead(embedding, hidden_activation="relu")
    logits = np.asarray(head(SEQUENCE, POSITIONS))
    gathered = SEQUENCE[np.arange(2)[:, None], POSITIONS]
    hidden = np.maximum(gathered @ np.asarray(head.dense.kernel) + np.asarray(head.dense.bias), 0)
    mean, variance = hidden.mean(-1, keepdims=True), hidden.var(-1, keepdims=True)
    hidden = (hidden - mean) / np.sqrt(variance + 1e-12)
    expected = hidden @ np.asarray(embedding.embeddings).T + np.asarray(head.output_bias)
    np.testing.assert_allclose(logits, expected, atol=1e-4)
    # Tied: changing the embedding table changes the logits.
    embedding.embeddings.assign(np.asarray(embedding.embeddings) * 2.0)
    assert not np.allclose(np.asarray(head(SEQUENCE, POSITIONS)), logits)
    assert head.dtype_policy.name == "float32" and logits.dtype == np.float32


def test_masked_lm_head_is_float32_under_mixed_precision():
    embedding = keras.layers.Embedding(30, 16, dtype="mixed_bfloat16")
    embedding.build((None,))
    head = MaskedLMHead(embedding, dtype="mixed_bfloat16")
    assert head(SEQUENCE, POSITIONS).dtype == "float32"


def test_next_sentence_head(tmp_path):
    head = NextSentenceHead()
    pooled = SEQUENCE[:, 0]
    logits = check_layer(head, (pooled,), tmp_path, expected_shapes=(2, 2))
    # Weights stored [2, hidden] as in Google checkpoints.
    assert tuple(head.output_weights.shape) == (2, 16)
    np.testing.assert_allclose(
        logits, pooled @ np.asarray(head.output_weights).T + np.asarray(head.output_bias), atol=1e-5
    )
