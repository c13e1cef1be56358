import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data import MaskingConfig, PretrainingDataConfig, TokenMasker, pretraining_dataset


def _features(documents, vocabulary, masking=None, batches=10, batch_size=100):
    config = PretrainingDataConfig(masking=masking or MaskingConfig())
    dataset = pretraining_dataset(documents, vocabulary, batch_size, config, seed=0)
    batches = list(dataset.take(batches).as_numpy_iterator())
    return {name: np.concatenate([batch[name] for batch in batches]) for name in batches[0]}


def _original_ids(features):
    """The unmasked sequences: masked_lm_ids put back at masked_lm_positions."""
    ids = features["input_word_ids"].copy()
    rows = np.arange(len(ids))[:, None]
    real = features["masked_lm_weights"] > 0
    ids[np.broadcast_to(rows, real.shape)[real], features["masked_lm_positions"][real]] = features[
        "masked_lm_ids"
    ][real]
    return ids


def test_masking_statistics_on_the_real_corpus(wikipedia_documents, vocabulary):
    features = _features(wikipedia_documents, vocabulary)
    special = np.array([token.startswith("[") and token.endswith("]") for token in vocabulary])
    original = _original_ids(features)
    real_tokens = (features["input_mask"] == 1) & ~special[original]
    assert real_tokens.sum() >= 100_000

    weights = features["masked_lm_weights"]
    real = weights > 0
    assert abs(real.sum() / real_tokens.sum() - 0.15) <= 0.005

    positions = features["masked_lm_positions"]
    rows = np.broadcast_to(np.arange(len(positions))[:, None], positions.shape)
    targets = features["masked_lm_ids"][real]
    shown = features["input_word_ids"][rows[real], positions[real]]
    assert not special[targets].any()  # [CLS], [SEP], [PAD], ... are never predicted
    assert not special[original[rows[real], positions[real]]].any()
    mask_id = vocabulary.index("[MASK]")
    masked_share = np.mean(shown == mask_id)
    kept_share = np.mean(shown == targets)
    random_share = 1 - masked_share - kept_share
    assert abs(masked_share - 0.8) <= 0.01
    assert abs(kept_share - 0.1) <= 0.01
    assert abs(random_share - 0.1) <= 0.01
    assert not special[shown[(shown != mask_id)]].any()  # random tokens are never special

    # Padding of the prediction slots: weight 0, position 0, id 0; real positions ascend.
    assert np.all(positions[~real] == 0) and np.all(features["masked_lm_ids"][~real] == 0)
    for row_positions, row_real in zip(positions, real, strict=True):
        assert np.all(np.diff(row_positions[row_real]) > 0)
    # Only predicted positions differ from the original ids.
    changed = features["input_word_ids"] != original
    assert changed.sum() == np.sum(shown != targets)


def test_whole_word_masking_masks_every_piece_of_a_word(wikipedia_documents, vocabulary):
    features = _features(
        wikipedia_documents, vocabulary, MaskingConfig(whole_word_masking=True), batches=3
    )
    continuation = np.array([token.startswith("##") for token in vocabulary])
    original = _original_ids(features)
    chosen = np.zeros_like(original, bool)
    real = features["masked_lm_weights"] > 0
    rows = np.broadcast_to(np.arange(len(original))[:, None], real.shape)
    chosen[rows[real], features["masked_lm_positions"][real]] = True
    pieces = 0
    for row in range(len(original)):
        for position in range(1, original.shape[1]):
            if continuation[original[row, position]]:
                # A "##" piece and the token before it (same word) are chosen together.
                assert chosen[row, position] == chosen[row, position - 1]
                pieces += chosen[row, position]
    assert pieces > 50
    share = real.sum() / ((features["input_mask"] == 1).sum() - 3 * len(original))
    assert 0.13 <= share <= 0.155


def test_span_masking_statistics_on_the_real_corpus(wikipedia_documents, vocabulary):
    masking = MaskingConfig(span_masking=True, max_predictions_per_seq=20)
    features = _features(wikipedia_documents, vocabulary, masking)
    original = _original_ids(features)
    real = features["masked_lm_weights"] > 0
    candidates = (features["input_mask"] == 1).sum() - 3 * len(original)
    assert abs(real.sum() / candidates - 0.15) <= 0.01  # the 15% budget

    # Runs of consecutive predicted positions: spans (two spans may touch).
    mask_id = vocabulary.index("[MASK]")
    continuation = np.array([token.startswith("##") for token in vocabulary])
    special = np.array([token.startswith("[") and token.endswith("]") for token in vocabulary])
    run_lengths, run_words, homogeneous, kinds = [], [], [], []
    for row in range(len(original)):
        positions = features["masked_lm_positions"][row][real[row]]
        shown = features["input_word_ids"][row, positions]
        kind = np.where(shown == mask_id, 0, np.where(shown == original[row, positions], 1, 2))
        for run in np.split(np.arange(len(positions)), np.flatnonzero(np.diff(positions) != 1) + 1):
            run_lengths.append(len(run))
            run_words.append(int((~continuation[original[row, positions[run]]]).sum()))
            homogeneous.append(len(set(kind[run])) == 1)
            kinds.append(kind[run[0]])
            # A span is whole words: it neither starts nor stops inside a word (a word cut by
            # truncation may start right after [CLS] or [SEP]).
            first, after = positions[run[0]], min(positions[run[-1]] + 1, original.shape[1] - 1)
            assert not continuation[original[row, first]] or special[original[row, first - 1]]
            assert not continuation[original[row, after]]
    # Geometric lengths (p = 0.2, at most 10 words; mean 3.8 words before the budget cuts
    # long ones): runs are several words long, many longer than one.
    assert 2.5 <= np.mean(run_words) <= 4.5 and np.mean(np.array(run_words) >= 3) > 0.35
    assert max(run_words) <= 20  # two touching spans of 10 words at most
    # One 80/10/10 decision per span: runs are all [MASK], all kept or all random, nearly
    # always (touching spans can mix); per-token decisions would mix most long runs.
    assert np.mean(homogeneous) > 0.9
    assert abs(np.mean(np.array(kinds) == 0) - 0.8) <= 0.03


def test_masks_change_with_the_seed_and_repeat_with_it(vocabulary):
    masker = TokenMasker(vocabulary)
    word_ids = tf.constant([[101] + list(range(2000, 2100)) + [102] + [0] * 26])
    input_mask = tf.cast(word_ids > 0, tf.int32)
    first = masker(word_ids, input_mask, seed=[0, 1])
    again = masker(word_ids, input_mask, seed=[0, 1])
    other = masker(word_ids, input_mask, seed=[0, 2])
    np.testing.assert_array_equal(first["masked_lm_positions"], again["masked_lm_positions"])
    assert not np.array_equal(first["masked_lm_positions"], other["masked_lm_positions"])
    # 15% of 100 real tokens.
    assert int(tf.reduce_sum(first["masked_lm_weights"])) == 15


def test_masking_config_is_validated():
    with pytest.raises(ValueError, match="masked_lm_prob"):
        MaskingConfig(masked_lm_prob=0.0)
    with pytest.raises(ValueError, match="at most 1"):
        MaskingConfig(mask_token_rate=0.9, random_token_rate=0.2)
    with pytest.raises(ValueError, match="span_length_p"):
        MaskingConfig(span_masking=True, span_length_p=0.0)
