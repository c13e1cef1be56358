"""Bucketed padding: string signatures give the answers of full padding, on fewer columns."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export import length_buckets
from keras_bert.export.buckets import bucket_examples, bucket_length, trim_to_bucket
from keras_bert.export.warmup import read_warmup_requests
from tests.export import builders
from tests.export.builders import SEQ_LENGTH, TASKS

# Short enough for the 16 bucket; odd text on purpose (accents, emoji, CJK, an empty string).
SHORT_INPUTS = {
    "text": ["Barack Obama visited Paris.", "", "Zoë est à Montréal 🥰 中文", "The [MASK] sat."],
    "question": ["Who visited Paris?", "What?", "Où est Zoë?", ""],
    "context": ["Barack Obama visited Paris.", "", "Zoë est à Montréal.", "Only context."],
}
# One text long enough for the last bucket: the whole batch takes it.
LONG_INPUTS = {
    name: [*texts[:-1], " ".join(["Long text about Lisbon and Porto."] * 6)]
    for name, texts in SHORT_INPUTS.items()
}
ATOL = 1e-5


def _signature_inputs(module, inputs: dict[str, list]) -> list[tf.Tensor]:
    return [tf.constant(inputs[name]) for name in module.example_inputs()]


def test_bucket_length_rounds_the_longest_row_up():
    buckets = (16, 32, 64)
    masks = {
        16: [[1] * 16 + [0] * 48, [1] * 3 + [0] * 61],
        32: [[1] * 17 + [0] * 47],
        64: [[1] * 64],
    }
    for expected, mask in masks.items():
        assert int(bucket_length(tf.constant(mask), buckets)) == expected
    assert int(bucket_length(tf.zeros([0, 64], tf.int32), buckets)) == 16  # empty batch
    trimmed = trim_to_bucket({"input_mask": tf.constant(masks[32])}, buckets)
    assert trimmed["input_mask"].numpy().tolist() == [[1] * 17 + [0] * 15]


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("inputs", [SHORT_INPUTS, LONG_INPUTS], ids=["short", "long"])
def test_string_signature_matches_full_padding(serving_modules, minilm_dir, task, inputs):
    module = serving_modules[task]
    # The same weights (seeded), every batch padded to seq_length as before buckets.
    full_padding = builders.serving_modules(str(minilm_dir / "vocab.txt"), buckets=(SEQ_LENGTH,))
    texts = _signature_inputs(module, inputs)
    expected_length = 16 if inputs is SHORT_INPUTS else SEQ_LENGTH
    packed = trim_to_bucket(module.pack_texts(*texts), module.buckets)
    assert packed["input_mask"].shape[1] == expected_length
    bucketed = module.serve_text(*texts)
    padded = full_padding[task].serve_text(*texts)
    assert sorted(bucketed) == sorted(padded)
    for name, value in bucketed.items():
        if value.dtype.is_floating:
            np.testing.assert_allclose(value, padded[name], atol=ATOL, err_msg=name)
        else:
            assert value.numpy().tolist() == padded[name].numpy().tolist(), name


@pytest.mark.parametrize("task", TASKS)
def test_bucket_examples_reach_every_bucket(serving_modules, task):
    module = serving_modules[task]
    assert module.buckets == length_buckets(SEQ_LENGTH) == (16, 32)
    lengths = []
    for request in bucket_examples(module):
        assert {len(texts) for texts in request.values()} == {1}
        packed = module.pack_texts(*(tf.constant(texts) for texts in request.values()))
        lengths.append(int(bucket_length(packed["input_mask"], module.buckets)))
    assert lengths == list(module.buckets)


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_warmup_records_cover_every_bucket(exported_base, serving_modules, task):
    module = serving_modules[task]
    covered = set()
    for log in read_warmup_requests(exported_base / task / "1"):
        request = log.predict_log.request
        if request.model_spec.signature_name != "serving_default":
            continue
        texts = [tf.constant(tf.make_ndarray(request.inputs[name])) for name in request.inputs]
        names = list(request.inputs)
        order = list(module.example_inputs())
        texts = [texts[names.index(name)] for name in order]
        covered.add(int(bucket_length(module.pack_texts(*texts)["input_mask"], module.buckets)))
    assert covered == set(module.buckets)


def test_buckets_must_end_at_seq_length(serving_modules):
    module = serving_modules["encoder"]
    with pytest.raises(ValueError, match=r"end at seq_length 32, got \(16, 64\)"):
        type(module)(module.model, module.preprocessor, buckets=(16, 64))
