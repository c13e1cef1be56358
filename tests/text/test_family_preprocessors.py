"""`load_preprocessor` for every family: the right tokenizer and packing, transformers' pair ids,
truncation, clear errors, and a config that rebuilds the same preprocessor."""

import json
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.errors import CheckpointError, ConfigError
from keras_bert.text import BertPreprocessor, TextPreprocessor
from tests.reference_files import variant_reference_file

FAMILIES = ("roberta", "albert", "deberta_v3", "distilbert", "electra/discriminator")
# The families whose tokenizer is BERT's WordPiece (`BertPreprocessor`).
WORDPIECE_FAMILIES = ("distilbert", "electra/discriminator")
SEQ_LENGTH = 64  # the reference files' padded length


def _reference(reference_dir, family):
    archive = np.load(variant_reference_file(reference_dir, family))
    arrays = {name: archive[name] for name in archive.files}
    arrays["texts"] = json.loads(str(arrays.pop("texts_json")))
    return arrays


@pytest.fixture(scope="module", params=FAMILIES)
def family(request, reference_dir):
    """(name, preprocessor at SEQ_LENGTH, reference arrays) of each family."""
    preprocessor = keras_bert.load_preprocessor(
        reference_dir / "variants" / request.param, seq_length=SEQ_LENGTH
    )
    return request.param, preprocessor, _reference(reference_dir, request.param)


def test_each_family_gets_its_tokenizer_and_packing(family):
    name, preprocessor, _ = family
    tokenizer_class = {
        "roberta": "BytePairTokenizer",
        "albert": "SentencePieceTokenizer",
        "deberta_v3": "SentencePieceTokenizer",
        "distilbert": "WordPieceTokenizer",
        "electra/discriminator": "WordPieceTokenizer",
    }[name]
    assert type(preprocessor.tokenizer).__name__ == tokenizer_class
    wordpiece = name in WORDPIECE_FAMILIES
    assert isinstance(preprocessor, BertPreprocessor if wordpiece else TextPreprocessor)
    assert preprocessor.packer.pair_separators == (2 if name == "roberta" else 1)


@pytest.mark.parametrize("part", ["singles", "pairs"])
def test_packed_inputs_equal_transformers(family, part):
    name, preprocessor, reference = family
    texts = reference["texts"][part]
    inputs = texts if part == "singles" else tuple(map(list, zip(*texts, strict=True)))
    packed = preprocessor(inputs)
    np.testing.assert_array_equal(packed["input_word_ids"], reference[f"{part}_input_ids"])
    np.testing.assert_array_equal(packed["input_mask"], reference[f"{part}_attention_mask"])
    expected_types = reference.get(f"{part}_token_type_ids")
    if expected_types is None:  # RoBERTa has one token type; ALBERT's file leaves them out
        ids = reference[f"{part}_input_ids"]
        first_sep = np.argmax(ids == preprocessor.packer.sep_id, axis=1)[:, np.newaxis]
        after_first_sep = np.arange(ids.shape[1]) > first_sep
        second_type_id = 0 if name == "roberta" else 1
        expected_types = after_first_sep * reference[f"{part}_attention_mask"] * second_type_id
    np.testing.assert_array_equal(packed["input_type_ids"], expected_types)


def test_empty_invalid_and_very_long_texts_pack(family):
    _, preprocessor, _ = family
    document = " ".join(["The cat sat on the mat, and the dog ate the carrot."] * 1000)
    texts = tf.constant([b"", b"\xff\xfe caf\xc3", document.encode()])
    packed = preprocessor(texts)
    cls_id, sep_id = preprocessor.packer.cls_id, preprocessor.packer.sep_id
    np.testing.assert_array_equal(packed["input_mask"].numpy().sum(1)[[0, 2]], [2, SEQ_LENGTH])
    assert packed["input_word_ids"].numpy()[0, :2].tolist() == [cls_id, sep_id]
    assert packed["input_word_ids"].numpy()[2, -1] == sep_id
    pairs = preprocessor((texts, tf.constant([document, "", "b"])))
    lengths = pairs["input_mask"].numpy().sum(1)
    assert lengths[0] == lengths[2] == SEQ_LENGTH and lengths[1] < SEQ_LENGTH
    separators = [sep_id] * preprocessor.packer.pair_separators
    first_tokens = pairs["input_word_ids"].numpy()[0, : 1 + len(separators)].tolist()
    assert first_tokens == [cls_id, *separators]


def test_config_rebuilds_the_same_preprocessor(family):
    _, preprocessor, reference = family
    restored = keras.saving.deserialize_keras_object(
        json.loads(json.dumps(keras.saving.serialize_keras_object(preprocessor)))
    )
    texts = reference["texts"]["singles"]
    for name, tensor in preprocessor(texts).items():
        np.testing.assert_array_equal(restored(texts)[name], tensor)


def test_missing_or_wrong_tokenizer_files_are_clear_errors(reference_dir, tmp_path):
    for family, tokenizer_file in [
        ("roberta", "merges.txt"),
        ("albert", "spiece.model"),
        ("deberta_v3", "spm.model"),
    ]:
        checkpoint = tmp_path / family
        shutil.copytree(reference_dir / "variants" / family, checkpoint)
        (checkpoint / tokenizer_file).chmod(0o644)
        (checkpoint / tokenizer_file).unlink()
        with pytest.raises(CheckpointError, match=f"has no {tokenizer_file}"):
            keras_bert.load_preprocessor(checkpoint)
        (checkpoint / tokenizer_file).write_bytes(b"\x08\x01 not a tokenizer file \xff")
        with pytest.raises(CheckpointError, match="cannot read the tokenizer"):
            keras_bert.load_preprocessor(checkpoint)
    config = json.loads((tmp_path / "albert" / "config.json").read_text())
    (tmp_path / "albert" / "config.json").write_text(json.dumps({**config, "model_type": "xlm"}))
    with pytest.raises(ConfigError, match="no preprocessor: Unknown model_type 'xlm'"):
        keras_bert.load_preprocessor(tmp_path / "albert")


def test_raw_string_model_with_the_preprocessor_saves_as_keras(family, tmp_path):
    _, preprocessor, reference = family
    text = keras.Input(shape=(), dtype="string")
    model = keras.Model(text, preprocessor(text)["input_word_ids"])
    model.save(tmp_path / "model.keras")
    restored = keras.saving.load_model(tmp_path / "model.keras")
    texts = tf.constant(reference["texts"]["singles"])
    np.testing.assert_array_equal(restored(texts), model(texts))
