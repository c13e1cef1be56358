"""ElectraPretrainer: a generator sharing the discriminator's embeddings, its draws at the masks,
the discriminator's loss weighted 50, no gradient through the draw, `.keras` round trips (its
XLA step: tests/training/test_xla_steps.py)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert import BertConfig
from keras_bert.models.electra_pretrainer import (
    DISCRIMINATOR_LOSS_WEIGHT,
    ElectraPretrainer,
    electra_checkpoints,
    generator_config,
)

CONFIG = BertConfig.preset(
    "tiny",
    vocab_size=60,
    max_position_embeddings=16,
    model_type="electra",
    pooler=False,
    embedding_size=32,
    dropout_rate=0.0,
    attention_dropout_rate=0.0,
)
INPUTS = {
    "input_word_ids": np.array([[2, 11, 4, 3, 0, 0], [2, 13, 4, 14, 4, 3]], "int32"),
    "input_mask": np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], "int32"),
    "input_type_ids": np.zeros((2, 6), "int32"),
    "masked_lm_positions": np.array([[2, 0], [2, 4]], "int32"),
    "masked_lm_ids": np.array([[17, 0], [20, 21]], "int32"),
    "masked_lm_weights": np.array([[1.0, 0.0], [1.0, 1.0]], "float32"),
}
LABELS = {"masked_lm": INPUTS["masked_lm_ids"]}
WEIGHTS = {"masked_lm": INPUTS["masked_lm_weights"]}


def test_generator_is_a_narrower_encoder_on_the_discriminators_embeddings():
    model = ElectraPretrainer(CONFIG, generator_width=0.25)
    generator = model.generator.encoder
    assert generator.embeddings is model.encoder.embeddings
    assert model.generator.masked_lm_head.token_embedding is model.encoder.token_embedding
    assert generator.bert_config == generator_config(CONFIG, 0.25)
    assert (generator.bert_config.hidden_size, generator.bert_config.num_heads) == (32, 1)
    # Every weight once: the shared embeddings are not counted twice.
    paths = [variable.path for variable in model.weights]
    assert len(paths) == len({id(variable) for variable in model.weights})
    shared = model.encoder.embeddings.count_params()
    own = model.generator.count_params() - shared
    assert model.count_params() == model.discriminator.count_params() + own
    outputs = model(INPUTS)
    assert outputs["masked_lm"].shape == (2, 2, 60)
    assert outputs["replaced_token"].shape == outputs["replaced_token_labels"].shape == (2, 6)
    # Labels only where a real prediction was drawn other than the original.
    labels = outputs["replaced_token_labels"].numpy()
    assert labels[0, [0, 1, 3, 4, 5]].sum() == 0 and labels[1, [0, 1, 3, 5]].sum() == 0


def test_loss_is_the_generators_plus_fifty_times_the_discriminators():
    keras.utils.set_random_seed(0)
    model = ElectraPretrainer(CONFIG)
    model.compile(optimizer=keras.optimizers.SGD(0.0))
    logs = model.train_on_batch(INPUTS, LABELS, WEIGHTS, return_dict=True)
    assert DISCRIMINATOR_LOSS_WEIGHT == 50.0
    expected = logs["masked_lm_loss"] + 50.0 * logs["replaced_token_loss"]
    assert logs["loss"] == pytest.approx(expected, rel=1e-5)
    assert 0.0 <= logs["replaced_token_accuracy"] <= 1.0


def test_the_discriminators_loss_reaches_the_generator_only_through_shared_embeddings():
    model = ElectraPretrainer(CONFIG)
    model.compile()
    with tf.GradientTape() as tape:
        outputs = model(INPUTS, training=True)
        mask = tf.cast(INPUTS["input_mask"], tf.float32)
        loss = model.loss["replaced_token"](
            outputs["replaced_token_labels"], outputs["replaced_token"], sample_weight=mask
        )
    variables = model.generator.trainable_weights
    gradients = tape.gradient(loss, variables)
    shared = {id(variable) for variable in model.encoder.embeddings.weights}
    for variable, gradient in zip(variables, gradients, strict=True):
        if id(variable) in shared:
            continue
        assert gradient is None or not np.any(np.asarray(tf.convert_to_tensor(gradient)))


def test_keras_file_keeps_the_sharing_and_the_weights(tmp_path):
    model = ElectraPretrainer(CONFIG, generator_width=0.5, seed=4)
    model(INPUTS)
    model.save(tmp_path / "electra.keras")
    restored = keras.saving.load_model(tmp_path / "electra.keras")
    assert restored.get_config() == model.get_config()
    assert restored.generator.encoder.embeddings is restored.encoder.embeddings
    encoder_inputs = {name: INPUTS[name] for name in ("input_word_ids", "input_mask")}
    encoder_inputs["input_type_ids"] = INPUTS["input_type_ids"]
    np.testing.assert_array_equal(
        restored.discriminator(encoder_inputs), model.discriminator(encoder_inputs)
    )
    np.testing.assert_array_equal(restored(INPUTS)["masked_lm"], model(INPUTS)["masked_lm"])


@pytest.mark.parametrize(
    "policy, generator_policy",
    [("mixed_bfloat16", "float32"), ("mixed_float16", "mixed_float16"), ("float32", "float32")],
)
def test_generator_computes_in_float32_where_the_run_computes_in_bfloat16(
    tmp_path, policy, generator_policy
):
    model = ElectraPretrainer(CONFIG, dtype=policy)
    assert model.discriminator.dtype_policy.name == model.encoder.dtype_policy.name == policy
    generator_layers = (model.generator, model.generator.encoder, model.generator.masked_lm_head)
    assert {layer.dtype_policy.name for layer in generator_layers} == {generator_policy}
    outputs = model(INPUTS)
    assert outputs["masked_lm"].dtype == "float32"
    model.save(tmp_path / "electra.keras")
    restored = keras.saving.load_model(tmp_path / "electra.keras")
    assert restored.generator.encoder.dtype_policy.name == generator_policy
    np.testing.assert_array_equal(restored(INPUTS)["masked_lm"], outputs["masked_lm"])


def test_checkpoints_are_the_discriminator_and_the_generator():
    model = ElectraPretrainer(CONFIG)
    checkpoints = electra_checkpoints(model)
    discriminator_config, discriminator = checkpoints["checkpoint"]
    generator_config_, generator = checkpoints["generator"]
    assert discriminator_config == CONFIG and generator_config_.hidden_size == 32
    assert "cls/discriminator_predictions/dense_prediction/kernel" in discriminator
    assert "cls/predictions/output_bias" in generator
    assert (
        generator["bert/embeddings/word_embeddings"]
        is (discriminator["bert/embeddings/word_embeddings"])
    )


def test_from_checkpoint_reads_the_discriminator_and_its_head(reference_dir):
    checkpoint = reference_dir / "variants" / "electra" / "discriminator"
    model = ElectraPretrainer.from_checkpoint(checkpoint)
    detector = keras_bert.load_replaced_token_detector(checkpoint)
    encoder_inputs = {
        "input_word_ids": INPUTS["input_word_ids"],
        "input_mask": INPUTS["input_mask"],
        "input_type_ids": INPUTS["input_type_ids"],
    }
    np.testing.assert_array_equal(model.discriminator(encoder_inputs), detector(encoder_inputs))
    assert model.generator.encoder.bert_config.hidden_size == 16  # a quarter of 64
