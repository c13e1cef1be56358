"""Bucketed padding: both signatures give the answers of full padding, on fewer columns."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.decoding.buckets import bucket_length, trim_to_bucket
from keras_bert.export import length_buckets
from keras_bert.export.buckets import bucket_examples
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
    # Padding in front is never cut: the last real column counts, not the number of them.
    assert int(bucket_length(tf.constant([[0] * 20 + [1] * 3 + [0] * 41]), buckets)) == 32
    # Ids wider than the last bucket keep every real column.
    assert int(bucket_length(tf.constant([[1] * 90 + [0] * 6]), buckets)) == 90
    assert int(bucket_length(tf.constant([[1] * 10 + [0] * 86]), buckets)) == 16
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
def test_ids_signature_computes_on_the_bucket_and_answers_at_the_requests_width(
    serving_modules, minilm_dir, task
):
    module = serving_modules[task]
    full_padding = builders.serving_modules(str(minilm_dir / "vocab.txt"), buckets=(SEQ_LENGTH,))
    # Ids padded to seq_length, as clients of ONNX Runtime send them: the 16 bucket is computed.
    ids = module.pack_texts(*_signature_inputs(module, SHORT_INPUTS))
    assert ids["input_mask"].shape[1] == SEQ_LENGTH
    assert int(bucket_length(ids["input_mask"], module.buckets)) == 16
    bucketed = module.serve_ids(ids)
    padded = full_padding[task].serve_ids(ids)
    assert sorted(bucketed) == sorted(padded)
    real = ids["input_mask"].numpy().astype(bool)
    for name, value in bucketed.items():
        value, expected = value.numpy(), padded[name].numpy()
        assert value.shape == expected.shape, name
        if name in module.POSITION_OUTPUTS:
            np.testing.assert_array_equal(value[:, 16:], module.POSITION_OUTPUTS[name])
            value, expected = value[real], expected[real]
        if value.dtype.kind == "f":
            np.testing.assert_allclose(value, expected, atol=ATOL, err_msg=name)
        else:
            assert value.tolist() == expected.tolist(), name


@pytest.mark.parametrize("task", TASKS)
def test_bucket_examples_reach_every_bucket(serving_modules, task):
    module = serving_modules[task]
    assert module.buckets == length_buckets(SEQ_LENGTH) == (8, 16, 24, 32)
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
    covered = {"serving_default": set(), "serving_ids": set()}
    for log in read_warmup_requests(exported_base / task / "1"):
        request = log.predict_log.request
        inputs = {
            name: tf.constant(tf.make_ndarray(proto)) for name, proto in request.inputs.items()
        }
        signature = request.model_spec.signature_name
        if signature == "serving_default":
            inputs = module.pack_texts(*(inputs[name] for name in module.example_inputs()))
        covered[signature].add(int(bucket_length(inputs["input_mask"], module.buckets)))
    assert covered == {"serving_default": set(module.buckets), "serving_ids": set(module.buckets)}


def test_buckets_must_end_at_seq_length(serving_modules):
    module = serving_modules["encoder"]
    with pytest.raises(ValueError, match=r"end at seq_length 32, got \(16, 64\)"):
        type(module)(module.model, module.preprocessor, buckets=(16, 64))


# Eight short rows and a long one: two groups (8 × 16 + 1 × 32 columns and a call) cost less
# than one (9 × 32).
MIXED_INPUTS = {
    name: [*texts[:-1], *texts[:-1], *texts[:2], long_texts[-1]]
    for (name, texts), long_texts in zip(SHORT_INPUTS.items(), LONG_INPUTS.values(), strict=True)
}


@pytest.mark.parametrize("task", TASKS)
def test_short_rows_beside_a_long_one_run_as_a_group_of_their_own(
    serving_modules, minilm_dir, task
):
    """`split_by_length` runs short rows apart from the long one, on fewer columns, and every
    row gets the answer of the whole batch run at once."""
    from keras_bert.decoding.buckets import split_by_length
    from keras_bert.export.signatures import CALL_COST_TOKENS

    module = serving_modules[task]
    texts = _signature_inputs(module, MIXED_INPUTS)
    packed = trim_to_bucket(module.pack_texts(*texts), module.buckets)
    order, first_rows = split_by_length(packed["input_mask"], module.buckets, CALL_COST_TOKENS)
    rows = len(order)
    assert 0 < int(first_rows) < rows and int(order[-1]) == rows - 1  # the long row apart
    whole = builders.serving_modules(str(minilm_dir / "vocab.txt"), length_groups=False)[task]
    grouped, expected = module.serve_text(*texts), whole.serve_text(*texts)
    for name, value in grouped.items():
        if value.dtype.is_floating:
            np.testing.assert_allclose(value, expected[name], atol=ATOL, err_msg=name)
        else:
            assert value.numpy().tolist() == expected[name].numpy().tolist(), name


def test_a_short_group_computes_on_its_own_columns(serving_modules, minilm_dir):
    """What shows the short rows ran on fewer columns: the encoder's `sequence_output` past
    their group's bucket is the signature's padding value (0), not the model's output at
    padded tokens, which the whole batch computes."""
    module = serving_modules["encoder"]
    ids = module.pack_texts(tf.constant(MIXED_INPUTS["text"]))
    grouped = module.serve_ids(ids)["sequence_output"].numpy()
    whole = builders.serving_modules(str(minilm_dir / "vocab.txt"), length_groups=False)
    padded = whole["encoder"].serve_ids(ids)["sequence_output"].numpy()
    short_width = 16
    assert not grouped[0, short_width:].any() and padded[0, short_width:].any()
    assert grouped[-1, short_width:].any()  # the long row
