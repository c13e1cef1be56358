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
from tests.conftest import reference_outputs

FAMILIES = (
    "roberta",
    "albert",
    "deberta_v3",
    "distilbert",
    "modernbert",
    "xlm_roberta",
    "electra/discriminator",
)
# The families whose tokenizer is BERT's WordPiece (`BertPreprocessor`).
WORDPIECE_FAMILIES = ("distilbert", "electra/discriminator")
# The families that pack pairs as RoBERTa: <s> A </s></s> B </s>, one token type.
ROBERTA_PACKING = ("roberta", "xlm_roberta")
SEQ_LENGTH = 64  # the reference files' padded length
# The families whose pairs have one token type.
ONE_TOKEN_TYPE = (*ROBERTA_PACKING, "modernbert")


def _reference(reference_dir, family):
    archive = reference_outputs(reference_dir, family)
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
        "modernbert": "BytePairTokenizer",
        "xlm_roberta": "UnigramTokenizer",
        "electra/discriminator": "WordPieceTokenizer",
    }[name]
    assert type(preprocessor.tokenizer).__name__ == tokenizer_class
    wordpiece = name in WORDPIECE_FAMILIES
    assert isinstance(preprocessor, BertPreprocessor if wordpiece else TextPreprocessor)
    assert preprocessor.packer.pair_separators == (2 if name in ROBERTA_PACKING else 1)


@pytest.mark.parametrize("part", ["singles", "pairs"])
def test_packed_inputs_equal_transformers(family, part):
    name, preprocessor, reference = family
    texts = reference["texts"][part]
    inputs = texts if part == "singles" else tuple(map(list, zip(*texts, strict=True)))
    packed = preprocessor(inputs)
    np.testing.assert_array_equal(packed["input_word_ids"], reference[f"{part}_input_ids"])
    np.testing.assert_array_equal(packed["input_mask"], reference[f"{part}_attention_mask"])
    expected_types = reference.get(f"{part}_token_type_ids")
    if expected_types is None:  # ONE_TOKEN_TYPE's one type; ALBERT's file: none
        ids = reference[f"{part}_input_ids"]
        first_sep = np.argmax(ids == preprocessor.packer.sep_id, axis=1)[:, np.newaxis]
        after_first_sep = np.arange(ids.shape[1]) > first_sep
        second_type_id = 0 if name in ONE_TOKEN_TYPE else 1
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
        ("modernbert", "tokenizer.json"),
        ("xlm_roberta", "sentencepiece.bpe.model"),
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


def test_a_tokenizer_with_ids_past_the_embedding_table_is_refused(reference_dir, tmp_path):
    """XLM-R's SentencePiece model (4,002 ids) beside a model of 3,000 (RoBERTa's config)."""
    checkpoint = tmp_path / "mismatched"
    shutil.copytree(reference_dir / "variants" / "roberta", checkpoint)
    shutil.copy(reference_dir / "variants" / "xlm_roberta" / "sentencepiece.bpe.model", checkpoint)
    config = checkpoint / "config.json"
    config.chmod(0o644)
    config.write_text(json.dumps({**json.loads(config.read_text()), "model_type": "xlm-roberta"}))
    with pytest.raises(
        CheckpointError, match="tokenizer has 4002 tokens but the model embeds 3000 ids"
    ) as error:
        keras_bert.load_preprocessor(checkpoint)
    assert "\n" not in str(error.value) and "vocabulary_from=" in str(error.value)


def test_past_the_model_s_positions_is_refused_and_longer_texts_are_cut_with_a_warning(
    reference_dir, caplog
):
    """One rule everywhere: `seq_length` at most the tokens the model reads (64 here; 512 at
    the real sizes), longer texts cut to it with a warning (`BertTask.fit`, `evaluate`,
    `predict` and `OnnxModel` warn alike; the SavedModel cuts them as its preprocessor does)."""
    checkpoint = reference_dir / "variants" / "xlm_roberta"
    with pytest.raises(ConfigError, match="seq_length 100 is longer than the 64 tokens"):
        keras_bert.load_preprocessor(checkpoint, seq_length=100)
    with pytest.raises(ConfigError, match="use seq_length 64 or less"):
        keras_bert.BertClassifier.from_checkpoint(checkpoint, num_classes=2, seq_length=65)
    assert keras_bert.load_preprocessor(checkpoint).seq_length == 64  # 128 where it reads 128

    classifier = keras_bert.BertClassifier.from_checkpoint(checkpoint, num_classes=2)
    document = "Ein sehr langer Text über nichts. " * 40
    with caplog.at_level("WARNING"):
        logits = classifier.predict([document, "Kurz."], verbose=0)
    [record] = [record for record in caplog.records if "are cut" in record.getMessage()]
    assert record.getMessage().startswith("1 of 2 texts have more tokens than seq_length 64")
    packed = classifier.preprocessor([document])
    assert packed["input_mask"].numpy().sum() == 64
    np.testing.assert_allclose(logits[:1], classifier(packed), atol=1e-5)
