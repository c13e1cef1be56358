import keras
import numpy as np

from keras_bert.layers.masked_lm_head import MaskedLMHead
from keras_bert.layers.next_sentence_head import NextSentenceHead
from keras_bert.layers.replaced_token_head import ReplacedTokenHead
from keras_bert.layers.span_boundary_head import SpanBoundaryHead, span_boundaries
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


def test_replaced_token_head_scores_every_position(tmp_path):
    head = ReplacedTokenHead(16, hidden_activation="relu")
    logits = check_layer(head, (SEQUENCE,), tmp_path, expected_shapes=(2, 6))
    hidden = np.maximum(SEQUENCE @ np.asarray(head.dense.kernel) + np.asarray(head.dense.bias), 0)
    expected = hidden @ np.asarray(head.prediction.kernel) + np.asarray(head.prediction.bias)
    np.testing.assert_allclose(logits, expected[..., 0], atol=1e-5)
    assert ReplacedTokenHead(16, dtype="mixed_bfloat16")(SEQUENCE).dtype == "float32"


def _span_bounds_by_walking(positions, sequence_length):
    """The reference: walk left and right from each real prediction over masked positions."""
    left, right, offset = [], [], []
    for row in positions:
        masked = {int(p) for p in row if p > 0}
        bounds = []
        for position in row:
            if position == 0:
                bounds.append(None)
                continue
            start = end = int(position)
            while start - 1 in masked:
                start -= 1
            while end + 1 in masked:
                end += 1
            bounds.append((start - 1, end + 1, position - start))
        left.append([b[0] for b in bounds if b])
        right.append([b[1] for b in bounds if b])
        offset.append([b[2] for b in bounds if b])
    return left, right, offset


def test_span_boundaries_match_walking_the_masked_runs():
    rng = np.random.default_rng(3)
    sequence_length, predictions = 24, 10
    rows = []
    for _ in range(50):
        chosen = np.sort(rng.choice(np.arange(1, sequence_length - 1), rng.integers(1, 9), False))
        rows.append(np.pad(chosen, (0, predictions - len(chosen))))
    positions = np.array(rows, "int32")
    left, right, offset = (np.asarray(t) for t in span_boundaries(positions, sequence_length))
    expected = _span_bounds_by_walking(positions, sequence_length)
    for row, real in enumerate(positions > 0):
        for got, want in zip((left, right, offset), expected, strict=True):
            assert got[row][real].tolist() == want[row]


def test_span_boundary_head(tmp_path):
    check_layer(SpanBoundaryHead(_embedding()), (SEQUENCE, POSITIONS), tmp_path, (2, 3, 30))


def test_span_boundary_head_decodes_the_bounds_and_offset_through_the_tied_table():
    embedding = _embedding()
    head = SpanBoundaryHead(embedding, max_span_offset=4, hidden_activation="relu")
    positions = np.array([[2, 3, 0], [1, 4, 0]], "int32")
    logits = np.asarray(head(SEQUENCE, positions))
    rows = np.arange(2)[:, None]
    left, right = np.array([[1, 1, 0], [0, 3, 0]]), np.array([[4, 4, 1], [2, 5, 2]])
    offset = np.array([[0, 1, 0], [0, 0, 0]])
    hidden = np.concatenate(
        [
            SEQUENCE[rows, left],
            SEQUENCE[rows, right],
            np.asarray(head.offset_embedding.embeddings)[offset],
        ],
        axis=-1,
    )
    for dense, _ in head.transforms:
        hidden = np.maximum(hidden @ np.asarray(dense.kernel) + np.asarray(dense.bias), 0)
        hidden = (hidden - hidden.mean(-1, keepdims=True)) / np.sqrt(
            hidden.var(-1, keepdims=True) + 1e-12
        )
    expected = hidden @ np.asarray(embedding.embeddings).T + np.asarray(head.output_bias)
    np.testing.assert_allclose(logits, expected, atol=1e-4)
