"""The masked LM of each family on its preprocessor's output: raw text gives transformers'
logits, and a mask written in the text predicts what the reference ids with that mask give."""

import json

import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.export import MaskedLMServing
from tests.checkpoints.test_family_parity import MASKED_LM_VARIANTS
from tests.conftest import reference_outputs

SEQ_LENGTH = 64  # the reference files' padding


@pytest.fixture(scope="module", params=MASKED_LM_VARIANTS)
def family(request, reference_dir):
    """(reference arrays, texts, preprocessor, masked LM) of a family's checkpoint."""
    checkpoint = reference_dir / "variants" / request.param
    reference = reference_outputs(reference_dir, request.param)
    texts = json.loads(str(reference["texts_json"]))["singles"]
    preprocessor = keras_bert.load_preprocessor(checkpoint, seq_length=SEQ_LENGTH)
    return reference, texts, preprocessor, keras_bert.load_masked_lm(checkpoint)


def test_raw_text_gives_transformers_logits(family):
    reference, texts, preprocessor, model = family
    inputs = preprocessor(tf.constant(texts))
    positions = tf.tile(tf.constant([[1, 2, 3]]), [len(texts), 1])
    logits = model({**inputs, "masked_lm_positions": positions})["masked_lm"]
    expected = reference["singles_mlm_logits_at_1_2_3"]
    assert np.abs(np.asarray(logits) - expected).max() <= 1e-4


def test_mask_written_in_text_predicts_as_the_reference_ids_with_the_mask(family):
    reference, texts, preprocessor, model = family
    module = MaskedLMServing(model, preprocessor, top_k=3, max_masks=1)
    tokenizer = preprocessor.tokenizer
    # Sentences whose first word is one token: the mask replaces it in the text and the ids.
    first_words = [text.split(" ", 1)[0] for text in texts]
    single = [
        index
        for index, ids in enumerate(tokenizer(tf.constant(first_words)).to_list())
        if ids == [int(reference["singles_input_ids"][index, 1])] and " " in texts[index]
    ]
    assert len(single) >= 2
    masked_texts = [f"{module.mask_token} {texts[index].split(' ', 1)[1]}" for index in single]
    served = module.serve_text(tf.constant(masked_texts))

    ids = reference["singles_input_ids"][single].astype("int32")
    ids[:, 1] = module.mask_id
    mask = reference["singles_attention_mask"][single].astype("int32")
    inputs = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": np.zeros_like(ids)}
    np.testing.assert_array_equal(preprocessor(tf.constant(masked_texts))["input_word_ids"], ids)
    positions = np.ones([len(single), 1], "int32")
    logits = model({**inputs, "masked_lm_positions": positions})["masked_lm"]
    probabilities, top_ids = tf.math.top_k(tf.nn.softmax(logits, axis=-1), k=3)
    np.testing.assert_array_equal(served["top_ids"], top_ids)
    np.testing.assert_allclose(served["top_probabilities"], probabilities, atol=1e-5)
    assert served["num_masks"].numpy().tolist() == [1] * len(single)
