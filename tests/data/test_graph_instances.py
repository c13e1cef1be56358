"""The library's builder of instances (`graph_instances`, as `pretraining_dataset` runs it over
documents in memory) against the tests' Python reference (`reference_instances.py`): the same
pair counts, label balance, lengths and masking rates on the real corpus."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data import MaskingConfig, PretrainingDataConfig, pretraining_dataset
from keras_bert.data.pretraining import document_separator, masked_batches
from tests.data.reference_instances import create_instances

SEQ_LENGTH = 128
BINS = np.linspace(0, SEQ_LENGTH, 9)
# Without short targets: the target is drawn once per document, and which documents draw one
# moves the share of full sequences by points from seed to seed of the reference itself (see
# test_streaming.py).
CONFIGS = {
    "next sentence": PretrainingDataConfig(SEQ_LENGTH, short_seq_prob=0.0),
    "sentence order": PretrainingDataConfig(
        SEQ_LENGTH,
        next_sentence_prediction=False,
        sentence_order_prediction=True,
        short_seq_prob=0.0,
    ),
    "full sentences": PretrainingDataConfig(SEQ_LENGTH, next_sentence_prediction=False),
}


@pytest.fixture(autouse=True)
def global_seed():
    """The shuffle buffers' randomness depends on TensorFlow's global seed as well as their own:
    fixed here, whatever tests ran before."""
    tf.random.set_seed(1)


def _reference_features(documents, vocabulary, config):
    """The reference's instances of one pass, packed and masked as the library masks."""
    instances = create_instances(
        documents,
        config.seq_length,
        seed=0,
        next_sentence_prediction=config.next_sentence_prediction,
        sentence_order_prediction=config.sentence_order_prediction,
        short_seq_prob=config.short_seq_prob,
        document_separator=document_separator(vocabulary, config),
    )
    dataset = tf.data.Dataset.from_generator(
        lambda: ((i.tokens_a, i.tokens_b, i.next_sentence_label) for i in instances),
        output_signature=(
            tf.TensorSpec([None], tf.int32),
            tf.TensorSpec([None], tf.int32),
            tf.TensorSpec([], tf.int32),
        ),
    )
    return masked_batches(dataset, vocabulary, 256, config, seed=0, drop_remainder=False)


def _statistics(batches) -> dict:
    batches = list(batches.as_numpy_iterator())
    features = {name: np.concatenate([batch[name] for batch in batches]) for name in batches[0]}
    real = features["input_mask"] == 1
    segment_b = real & (features["input_type_ids"] == 1)
    length_b = np.maximum(segment_b.sum(1) - 1, 0)  # B's own [SEP] left out
    length_a = real.sum(1) - 2 - np.where(segment_b.any(1), length_b + 1, 0)
    share = {
        "segment A length": np.histogram(length_a, BINS)[0] / len(length_a),
        "segment B length": np.histogram(length_b, BINS)[0] / len(length_b),
    }
    return {
        "sequences": len(length_a),
        "label share": features["next_sentence_labels"].mean(),
        "tokens per sequence": (length_a + length_b).mean(),
        "predictions per token": features["masked_lm_weights"].sum() / (length_a + length_b).sum(),
        **share,
    }


@pytest.mark.slow
@pytest.mark.parametrize("objective", CONFIGS)
def test_the_library_builder_makes_the_references_instances(
    objective, wikipedia_documents, vocabulary
):
    # ~20 s each on the slow CI CPU: a pass over the 105 articles (600k tokens) in both builders
    # is what makes the shares precise to a point.
    config = CONFIGS[objective]
    built = _statistics(
        pretraining_dataset(
            wikipedia_documents,
            vocabulary,
            256,
            config,
            seed=0,
            num_epochs=1,
            drop_remainder=False,
        )
    )
    reference = _statistics(_reference_features(wikipedia_documents, vocabulary, config))
    print(f"\n{objective}: built / reference")
    for name in built:
        print(f"{name:>22}: {np.round(built[name], 3)} / {np.round(reference[name], 3)}")
    assert abs(built["sequences"] / reference["sequences"] - 1) < 0.03
    assert abs(built["tokens per sequence"] / reference["tokens per sequence"] - 1) < 0.02
    for name in ("segment A length", "segment B length"):
        np.testing.assert_allclose(built[name], reference[name], atol=0.03, err_msg=name)
    if config.sentence_pairs:
        assert abs(built["label share"] - 0.5) <= 0.02
        assert abs(reference["label share"] - 0.5) <= 0.02
    else:
        assert built["label share"] == reference["label share"] == 0
    # BERT's rate of predictions per real token (at most 20 a sequence).
    assert abs(built["predictions per token"] - reference["predictions per token"]) < 0.003
    assert abs(built["predictions per token"] - MaskingConfig().masked_lm_prob) < 0.01
