"""The real MiniLM checkpoint reproduces Hugging Face transformers' outputs."""

import json
import shutil

import numpy as np
import pytest

from keras_bert import BertEncoder
from keras_bert.checkpoints import (
    CheckpointError,
    encoder_variables,
    load_checkpoint,
    save_google_checkpoint,
)

OUTPUTS = ("embedding_output", "sequence_output", "pooled_output")


def reference_inputs(reference, kind):
    return {
        "input_word_ids": reference[f"{kind}_input_ids"],
        "input_mask": reference[f"{kind}_attention_mask"],
        "input_type_ids": reference[f"{kind}_token_type_ids"],
    }


def assert_matches_reference(outputs, reference, kind):
    real_tokens = reference[f"{kind}_attention_mask"] == 1
    for name in OUTPUTS:
        difference = np.abs(np.asarray(outputs[name]) - reference[f"{kind}_{name}"])
        assert difference.max() <= 1e-4, (kind, name, difference.max())
    # At real (unpadded) tokens the match is closer still.
    sequence = np.asarray(outputs["sequence_output"])[real_tokens]
    np.testing.assert_allclose(
        sequence, reference[f"{kind}_sequence_output"][real_tokens], atol=1e-5
    )


@pytest.fixture(scope="module")
def minilm_encoder(minilm_dir):
    return BertEncoder.from_checkpoint(minilm_dir, output_all_layers=True)


@pytest.mark.parametrize("kind", ["singles", "pairs"])
def test_hugging_face_checkpoint_matches_transformers(minilm_encoder, reference, kind):
    outputs = minilm_encoder(reference_inputs(reference, kind))
    assert_matches_reference(outputs, reference, kind)


def test_google_checkpoint_matches_transformers(minilm_dir, minilm_encoder, reference, tmp_path):
    # The MiniLM weights written in the original TF1 layout read back to the same model.
    checkpoint = load_checkpoint(minilm_dir)
    prefix = save_google_checkpoint(
        checkpoint.tensors, checkpoint.config, tmp_path, checkpoint.vocabulary_file
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "bert_config.json",
        "bert_model.ckpt.data-00000-of-00001",
        "bert_model.ckpt.index",
        "vocab.txt",
    ]
    for path in (tmp_path, prefix):
        encoder = BertEncoder.from_checkpoint(path, output_all_layers=True)
        for kind in ("singles", "pairs"):
            assert_matches_reference(encoder(reference_inputs(reference, kind)), reference, kind)


def test_every_encoder_variable_is_named(minilm_encoder, minilm_dir):
    names = encoder_variables(minilm_encoder)
    assert len(names) == len(minilm_encoder.weights) == 5 + 16 * 6 + 2
    checkpoint = load_checkpoint(minilm_dir)
    assert set(checkpoint.tensors) == set(names)


def test_keras_hub_backbone_is_a_second_witness(minilm_dir, minilm_encoder, reference):
    """keras-hub loads the same safetensors with its own converter.

    Its BertBackbone hard-codes the tanh approximation of GELU (as Google's TF1 code did), while
    this checkpoint's config asks for the exact erf GELU (`hidden_act: "gelu"`), which transformers
    and keras_bert use. So keras-hub differs from the reference by ~3e-3, and agrees with
    keras_bert to float32 precision once keras_bert uses the tanh approximation too.
    """
    keras_hub = pytest.importorskip("keras_hub")
    backbone = keras_hub.models.BertBackbone.from_preset(str(minilm_dir))
    approximate = BertEncoder.from_checkpoint(minilm_dir, hidden_activation="gelu_approximate")
    inputs = reference_inputs(reference, "singles")
    real_tokens = inputs["input_mask"] == 1
    peer = backbone(
        {
            "token_ids": inputs["input_word_ids"],
            "padding_mask": inputs["input_mask"],
            "segment_ids": inputs["input_type_ids"],
        }
    )
    ours = approximate(inputs)
    np.testing.assert_allclose(
        np.asarray(ours["sequence_output"])[real_tokens],
        np.asarray(peer["sequence_output"])[real_tokens],
        atol=2e-5,
    )
    np.testing.assert_allclose(ours["pooled_output"], peer["pooled_output"], atol=2e-5)
    peer_error = np.abs(
        np.asarray(peer["sequence_output"])[real_tokens]
        - reference["singles_sequence_output"][real_tokens]
    ).max()
    assert 1e-3 < peer_error < 1e-2


# Bad checkpoints give errors that say what is wrong -------------------------------------------


def copy_checkpoint(minilm_dir, destination):
    destination.mkdir()
    for name in ("config.json", "model.safetensors", "vocab.txt"):
        shutil.copyfile(minilm_dir / name, destination / name)
    return destination


def test_missing_paths(tmp_path):
    with pytest.raises(FileNotFoundError, match="No checkpoint at .*nowhere"):
        BertEncoder.from_checkpoint(tmp_path / "nowhere")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(CheckpointError, match="No BERT checkpoint in .*found notes.txt"):
        BertEncoder.from_checkpoint(tmp_path)


def test_truncated_safetensors(minilm_dir, tmp_path):
    directory = copy_checkpoint(minilm_dir, tmp_path / "truncated")
    weights = directory / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:10_000_000])
    with pytest.raises(CheckpointError, match="truncated or not a safetensors file"):
        BertEncoder.from_checkpoint(directory)


def test_truncated_google_checkpoint(minilm_dir, tmp_path):
    checkpoint = load_checkpoint(minilm_dir)
    prefix = save_google_checkpoint(checkpoint.tensors, checkpoint.config, tmp_path)
    data_file = tmp_path / "bert_model.ckpt.data-00000-of-00001"
    data_file.write_bytes(data_file.read_bytes()[:1000])
    with pytest.raises(CheckpointError, match="Cannot read the TF checkpoint .*truncated"):
        BertEncoder.from_checkpoint(prefix)


def test_config_that_does_not_fit_the_weights(minilm_dir, tmp_path):
    directory = copy_checkpoint(minilm_dir, tmp_path / "mismatch")
    config = json.loads((directory / "config.json").read_text())
    config.update(num_hidden_layers=8, vocab_size=30000)
    (directory / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError) as error:
        BertEncoder.from_checkpoint(directory)
    message = str(error.value)
    assert "does not fit the model (config: L8/H384/A12, vocabulary 30000)" in message
    assert "missing tensors (32): bert/encoder/layer_6/" in message
    assert (
        "tensors of the wrong shape (1): bert/embeddings/word_embeddings "
        "(checkpoint (30522, 384), model (30000, 384))" in message
    )
