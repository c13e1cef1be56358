"""DeBERTa-v3 beyond the reference outputs (tests/checkpoints/test_family_parity.py): its
config, relative positions at any length, XLA, its errors and every task model on its encoder."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert import BertConfig, BertEncoder, CheckpointError, ConfigError
from keras_bert.checkpoints import encoder_variables, load_checkpoint, save_google_checkpoint
from keras_bert.layers.disentangled_attention import DisentangledSelfAttention
from keras_bert.layers.relative_positions import relative_embedding_rows
from keras_bert.models import BertMaskedLM, BertQuestionAnswerer, BertTokenClassifier
from keras_bert.training import create_optimizer
from tests.layer_checks import check_layer


@pytest.fixture(scope="module")
def deberta_dir(reference_dir):
    return reference_dir / "variants" / "deberta_v3"


@pytest.fixture(scope="module")
def deberta_reference(reference_dir):
    with np.load(reference_dir / "variants" / "deberta_v3_visible_sentences_reference.npz") as npz:
        return {name: npz[name] for name in npz.files}


def _inputs(reference, part="singles", seq_length=None):
    ids = reference[f"{part}_input_ids"][:, :seq_length].astype("int32")
    return {
        "input_word_ids": ids,
        "input_mask": reference[f"{part}_attention_mask"][:, :seq_length].astype("int32"),
        "input_type_ids": np.zeros_like(ids),
    }


def test_config_reads_the_relative_attention_fields(deberta_dir):
    config = BertConfig.from_json_file(deberta_dir / "config.json")
    assert (config.model_type, config.pooler, config.position_biased_input) == (
        "deberta-v2",
        False,
        False,
    )
    assert config.relative_attention_terms == ("p2c", "c2p") and config.share_att_key
    assert (config.position_buckets, config.relative_position_range) == (16, 512)
    assert config.relative_attention_span == 16 and config.norm_rel_ebd == "layer_norm"
    assert BertConfig.from_json(config.to_json()) == config
    assert BertConfig.from_original_dict(config.to_original_dict()) == config


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"hidden_size": 66}, "not divisible by num_heads"),
        ({"pos_att_type": ["c2p", "p2p"]}, "Unknown pos_att_type 'c2p|p2p'"),
        ({"norm_rel_ebd": "rms"}, "Unknown norm_rel_ebd 'rms'"),
        ({"conv_kernel_size": 3}, "conv_kernel_size 3"),
        ({"embedding_size": 32}, "embedding_size 32 differs"),
    ],
)
def test_bad_deberta_configs_are_config_errors(deberta_dir, changes, message):
    values = json.loads((deberta_dir / "config.json").read_text())
    with pytest.raises(ConfigError, match=message):
        BertConfig.from_original_dict({**values, **changes})


def test_relative_rows_cover_only_what_a_length_reaches():
    # DeBERTa-v3's buckets at 128 tokens: distances up to 127 keep their own row.
    content_to_position, position_to_content, start, stop = relative_embedding_rows(
        128, 256, 256, 512
    )
    assert (start, stop) == (129, 384)
    np.testing.assert_array_equal(content_to_position, position_to_content)
    assert content_to_position[127, 0] == 254 and content_to_position[0, 127] == 0


def test_random_deberta_encoder_passes_the_layer_checks(deberta_dir, tmp_path):
    """Relative embeddings and disentangled attention inside the encoder (they take a table
    without a batch axis): eager = symbolic, config and `.keras` round trips, a training step."""
    config = BertConfig.from_json_file(deberta_dir / "config.json").replace(
        vocab_size=50, dropout_rate=0.0, attention_dropout_rate=0.0
    )
    inputs = {
        "input_word_ids": np.array([[1, 7, 9, 2, 0, 0], [1, 5, 6, 8, 4, 2]], "int32"),
        "input_mask": np.array([[1, 1, 1, 1, 0, 0], [1] * 6], "int32"),
        "input_type_ids": np.zeros((2, 6), "int32"),
    }
    outputs = check_layer(
        BertEncoder(config),
        inputs,
        tmp_path,
        {
            "sequence_output": (2, 6, config.hidden_size),
            "first_token_output": (2, config.hidden_size),
        },
    )
    assert np.all(np.isfinite(outputs["sequence_output"]))


def test_disentangled_attention_ignores_padded_keys():
    rng = np.random.default_rng(0)
    hidden_states = rng.normal(size=(2, 6, 16)).astype("float32")
    padding_mask = np.array([[1] * 6, [1, 1, 1, 1, 0, 0]], "int32")
    table = rng.normal(size=(8, 16)).astype("float32")
    layer = DisentangledSelfAttention(
        16, 4, position_buckets=4, max_relative_positions=16, attention_dropout_rate=0.0
    )
    outputs = np.asarray(layer(hidden_states, padding_mask, table))
    noisy = hidden_states.copy()
    noisy[1, 4:] = 100.0
    changed = np.asarray(layer(noisy, padding_mask, table))
    np.testing.assert_allclose(changed[1, :4], outputs[1, :4], atol=1e-5)
    clone = DisentangledSelfAttention.from_config(layer.get_config())
    clone(hidden_states, padding_mask, table)
    clone.set_weights(layer.get_weights())
    np.testing.assert_array_equal(np.asarray(clone(hidden_states, padding_mask, table)), outputs)


def test_outputs_do_not_depend_on_padding_or_trace_length(deberta_dir, deberta_reference):
    """The same sentences padded to 32 instead of 64, and through a graph traced without a
    sequence length, give transformers' outputs at real tokens."""
    encoder = keras_bert.load_encoder(deberta_dir)
    inputs = _inputs(deberta_reference, seq_length=32)
    assert inputs["input_mask"][:, 31].sum() == 0  # every sentence fits
    real = inputs["input_mask"].astype(bool)
    expected = deberta_reference["singles_sequence_output"][:, :32][real]
    static = np.asarray(encoder(inputs)["sequence_output"])
    signature = {name: tf.TensorSpec([None, None], tf.int32, name) for name in inputs}
    traced = tf.function(lambda features: encoder(features), input_signature=[signature])
    dynamic = np.asarray(traced(inputs)["sequence_output"])
    assert np.abs(static[real] - expected).max() <= 1e-4
    assert np.abs(dynamic[real] - expected).max() <= 1e-4


def test_encoder_saves_and_loads(deberta_dir, deberta_reference, tmp_path):
    encoder = keras_bert.load_encoder(deberta_dir, output_all_layers=True)
    assert "pooled_output" not in encoder.output
    assert encoder.count_params() == encoder.bert_config.num_parameters()
    clone = BertEncoder.from_config(encoder.get_config())
    assert clone.bert_config == encoder.bert_config
    encoder.save(tmp_path / "encoder.keras")
    restored = keras.saving.load_model(tmp_path / "encoder.keras")
    inputs = _inputs(deberta_reference, seq_length=24)
    np.testing.assert_allclose(
        restored(inputs)["sequence_output"], encoder(inputs)["sequence_output"], atol=1e-6
    )


def test_google_format_round_trip(deberta_dir, deberta_reference, tmp_path):
    """What pretraining saves (`bert_config.json` + a TF checkpoint) loads back the same."""
    encoder = keras_bert.load_encoder(deberta_dir)
    tensors = {name: variable.numpy() for name, variable in encoder_variables(encoder).items()}
    save_google_checkpoint(tensors, encoder.bert_config, tmp_path)
    restored = keras_bert.load_encoder(tmp_path)
    assert restored.bert_config == encoder.bert_config
    inputs = _inputs(deberta_reference, seq_length=24)
    np.testing.assert_array_equal(
        restored(inputs)["sequence_output"], encoder(inputs)["sequence_output"]
    )


def test_checkpoint_errors_name_the_tensors(deberta_dir):
    checkpoint = load_checkpoint(deberta_dir)
    del checkpoint.tensors["bert/encoder/rel_embeddings"]
    checkpoint.tensors["bert/encoder/layer_1/attention/self/key/bias"] = np.zeros(3, "float32")
    checkpoint.tensors["bert/encoder/extra"] = np.zeros(3, "float32")
    with pytest.raises(CheckpointError) as error:
        BertEncoder.from_checkpoint(checkpoint)
    message = str(error.value)
    assert "missing tensors (1): bert/encoder/rel_embeddings" in message
    assert "unexpected tensors (1): bert/encoder/extra" in message
    assert "bert/encoder/layer_1/attention/self/key/bias (checkpoint (3,), model (64,))" in message


def _first_step_loss(build, batch, jit_compile: bool) -> float:
    keras.utils.set_random_seed(0)
    model = build()
    model.compile(optimizer=create_optimizer(1e-3, total_steps=10), jit_compile=jit_compile)
    return model.fit(tf.data.Dataset.from_tensors(batch), verbose=0).history["loss"][0]


def _masked_lm_batch(inputs):
    positions = np.tile(np.array([[1, 2, 3]], "int32"), (len(inputs["input_mask"]), 1))
    return (
        {**inputs, "masked_lm_positions": positions},
        {"masked_lm": inputs["input_word_ids"][:, 1:4]},
        {"masked_lm": np.ones(positions.shape, "float32")},
    )


def _classifier_batch(inputs):
    return inputs, np.arange(len(inputs["input_mask"])) % 2


XLA_MODELS = {
    "masked_lm": (
        lambda path: keras_bert.load_masked_lm(path, dropout_rate=0.0, attention_dropout_rate=0.0),
        _masked_lm_batch,
    ),
    "classifier": (
        lambda path: keras_bert.BertClassifier(
            keras_bert.load_encoder(path, dropout_rate=0.0, attention_dropout_rate=0.0),
            num_classes=2,
            dropout_rate=0.0,
        ),
        _classifier_batch,
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("model", sorted(XLA_MODELS))
def test_xla_step_matches_the_plain_step(model, deberta_dir, deberta_reference):
    """What a TPU runs: the `jit_compile=True` train step gives the plain step's loss."""
    build, make_batch = XLA_MODELS[model]
    batch = make_batch(_inputs(deberta_reference, seq_length=32))
    plain = _first_step_loss(lambda: build(deberta_dir), batch, jit_compile=False)
    compiled = _first_step_loss(lambda: build(deberta_dir), batch, jit_compile=True)
    assert np.isfinite(plain) and abs(compiled - plain) <= 1e-4 * max(1.0, abs(plain))


TASKS = {
    "token_classifier": (
        lambda encoder: BertTokenClassifier(encoder, label_names=["O", "B-x", "I-x"]),
        lambda inputs: np.where(inputs["input_mask"] > 0, inputs["input_word_ids"] % 3, -100),
    ),
    "question_answerer": (
        BertQuestionAnswerer,
        lambda inputs: {
            "start_logits": np.full(len(inputs["input_mask"]), 2),
            "end_logits": np.full(len(inputs["input_mask"]), 3),
        },
    ),
}


@pytest.mark.parametrize("task", sorted(TASKS))
def test_task_models_fit_on_the_deberta_encoder(task, deberta_dir, deberta_reference):
    build, labels = TASKS[task]
    inputs = _inputs(deberta_reference, seq_length=32)
    keras.utils.set_random_seed(0)
    model = build(keras_bert.load_encoder(deberta_dir))
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    history = model.fit(inputs, labels(inputs), epochs=15, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < 0.8 * history.history["loss"][0]


def test_masked_lm_fits_on_the_deberta_encoder(deberta_dir, deberta_reference):
    features, labels, weights = _masked_lm_batch(_inputs(deberta_reference, seq_length=32))
    keras.utils.set_random_seed(0)
    model = BertMaskedLM(keras_bert.load_encoder(deberta_dir))
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    history = model.fit(
        features,
        labels,
        sample_weight=weights,
        epochs=15,
        batch_size=8,
        verbose=0,
    )
    assert history.history["loss"][-1] < 0.8 * history.history["loss"][0]
