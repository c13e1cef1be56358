"""BertPreprocessor and WordPieceTokenizer: properties, offsets, errors, serialization, export."""

import json
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given
from hypothesis import strategies as st

import keras_bert
from keras_bert import BertConfig
from keras_bert.errors import ConfigError, DataError
from keras_bert.text import BertPreprocessor, WordPieceTokenizer

SEQ_LENGTH = 32


@pytest.fixture(scope="module")
def small_preprocessor(minilm_dir):
    return BertPreprocessor.from_checkpoint(minilm_dir, seq_length=SEQ_LENGTH)


def _empty_row() -> list[int]:
    return [101, 102] + [0] * (SEQ_LENGTH - 2)


@given(st.text())
def test_arbitrary_unicode_matches_tokenizers(tokenizer, hf_tokenizer, text):
    expected = hf_tokenizer.encode(text, add_special_tokens=False).ids
    assert tokenizer(tf.constant([text])).to_list() == [expected]


@given(st.binary())
def test_invalid_utf8_is_replaced_then_deleted(tokenizer, hf_tokenizer, data):
    """Invalid bytes act as U+FFFD, which clean_text deletes: like `tokenizers` on
    `data.decode("utf-8", errors="replace")`."""
    expected = hf_tokenizer.encode(data.decode("utf-8", errors="replace"), add_special_tokens=False)
    assert tokenizer(tf.constant([data])).to_list() == [expected.ids]


@pytest.mark.parametrize("text", ["", " ", "\t\n\r \u3000\u00a0", "\x00\u200b\ufffd", b"\xff\xfe"])
def test_empty_and_whitespace_only_give_cls_sep_and_padding(small_preprocessor, text):
    inputs = small_preprocessor(tf.constant([text]))
    np.testing.assert_array_equal(inputs["input_word_ids"], [_empty_row()])
    np.testing.assert_array_equal(inputs["input_mask"], [[1, 1] + [0] * (SEQ_LENGTH - 2)])
    np.testing.assert_array_equal(inputs["input_type_ids"], np.zeros([1, SEQ_LENGTH]))


def test_long_document_is_truncated(small_preprocessor):
    document = " ".join(["word"] * 10_000)
    ids = small_preprocessor(tf.constant([document, document]))["input_word_ids"].numpy()
    np.testing.assert_array_equal(ids[0], [101] + [2773] * (SEQ_LENGTH - 2) + [102])
    pair = small_preprocessor(([document], ["short"]))["input_word_ids"].numpy()
    np.testing.assert_array_equal(pair[0, -3:], [102, 2460, 102])


def test_offsets_index_the_raw_text(tokenizer):
    """Pieces of words changed only by ASCII lowercasing get exact byte spans; pieces of other
    words (accents, Greek capitals) get the whole raw word's span."""
    text = "The unaffable résumé: naïve ΟΔΟΣ, 中文!"
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant([text]))
    raw = text.encode("utf-8")
    spans = zip(starts[0].numpy(), ends[0].numpy(), strict=True)
    assert [raw[start:end].decode() for start, end in spans] == [
        "The", "una", "ffa", "ble", "résumé", ":", "naïve",
        "ΟΔΟΣ", "ΟΔΟΣ", "ΟΔΟΣ", "ΟΔΟΣ", ",", "中", "文", "!",
    ]  # fmt: skip
    assert tokenizer.id_to_token(ids).to_list()[0] == [
        token.encode() for token in [
            "the", "una", "##ffa", "##ble", "resume", ":", "naive",
            "ο", "##δ", "##ο", "##σ", ",", "中", "文", "!",
        ]
    ]  # fmt: skip


def test_words_with_offsets_group_the_pieces_of_each_word(tokenizer):
    text = "Unaffable [MASK], naïve 中文"
    texts = tf.constant([text])
    ids, starts, ends = tokenizer.tokenize_words_with_offsets(texts)
    assert ids.merge_dims(1, 2).to_list() == tokenizer(texts).to_list()
    assert tokenizer.id_to_token(ids).to_list() == [
        [
            [b"una", b"##ffa", b"##ble"],
            [b"[MASK]"],
            [b","],
            [b"naive"],
            [b"\xe4\xb8\xad"],
            [b"\xe6\x96\x87"],
        ]
    ]
    raw = text.encode("utf-8")
    spans = zip(starts[0].numpy(), ends[0].numpy(), strict=True)
    assert [raw[start:end].decode() for start, end in spans] == [
        "Unaffable", "[MASK]", ",", "naïve", "中", "文"
    ]  # fmt: skip


def test_id_to_token_inverts_ids(tokenizer):
    ids = tokenizer(tf.constant(["the [MASK] sat on unaffable mats"]))
    tokens = tokenizer.id_to_token(ids).to_list()
    assert tokens == [[b"the", b"[MASK]", b"sat", b"on", b"una", b"##ffa", b"##ble", b"mats"]]


def test_scalar_and_python_list_inputs(small_preprocessor):
    batched = small_preprocessor(["a cat", "the dog"])["input_word_ids"].numpy()
    scalar = small_preprocessor("the dog")["input_word_ids"].numpy()
    np.testing.assert_array_equal(scalar, batched[1])


def test_an_empty_list_packs_no_rows_and_a_list_of_other_values_is_an_error(small_preprocessor):
    assert small_preprocessor([])["input_word_ids"].shape == (0, SEQ_LENGTH)
    # The error is the message itself, not one inside Keras' "Exception encountered when
    # calling ..." report.
    with pytest.raises(DataError, match=r"^Text 1 is None \(NoneType\), not a string"):
        small_preprocessor(["a cat", None])
    with pytest.raises(DataError, match=r"Text 0 is 7 \(int\)"):
        small_preprocessor([7, 8])
    with pytest.raises(DataError, match="differ in length: 2 texts and 1"):
        small_preprocessor((["a cat", "a dog"], ["sat"]))


def test_in_tf_data_map(small_preprocessor):
    texts = ["The cat sat.", "", "Hello, World!", "x" * 500]
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(3).map(small_preprocessor)
    mapped = np.concatenate([batch["input_word_ids"].numpy() for batch in dataset])
    np.testing.assert_array_equal(mapped, small_preprocessor(texts)["input_word_ids"])
    pairs = tf.data.Dataset.from_tensor_slices((texts, texts[::-1])).batch(4)
    pair_batch = next(iter(pairs.map(lambda a, b: small_preprocessor((a, b)))))
    expected = small_preprocessor((texts, texts[::-1]))
    np.testing.assert_array_equal(pair_batch["input_type_ids"], expected["input_type_ids"])


def _functional_model(preprocessor: BertPreprocessor) -> keras.Model:
    texts = keras.Input(shape=(), dtype="string", name="texts")
    return keras.Model(texts, preprocessor(texts))


def test_keras_save_and_load_gives_identical_outputs(small_preprocessor, tmp_path):
    texts = tf.constant(["The [MASK] sat.", "Straße ΟΔΟΣ 中文 🥰", ""])
    model = _functional_model(small_preprocessor)
    path = tmp_path / "preprocessor.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    expected = model(texts)
    for name, tensor in restored(texts).items():
        np.testing.assert_array_equal(tensor, expected[name])


def test_functional_model_on_pairs(small_preprocessor):
    first = keras.Input(shape=(), dtype="string", name="first")
    second = keras.Input(shape=(), dtype="string", name="second")
    model = keras.Model([first, second], small_preprocessor((first, second)))
    texts = (tf.constant(["The cat sat.", "Héllo"]), tf.constant(["It purred.", ""]))
    outputs = model(list(texts))
    for name, tensor in small_preprocessor(texts).items():
        np.testing.assert_array_equal(outputs[name], tensor)


def test_config_round_trip(small_preprocessor):
    config = small_preprocessor.get_config()
    restored = BertPreprocessor.from_config(json.loads(json.dumps(config)))
    assert restored.get_config() == config
    texts = tf.constant(["Héllo wörld", "a b c"])
    np.testing.assert_array_equal(
        restored(texts)["input_word_ids"], small_preprocessor(texts)["input_word_ids"]
    )


@pytest.mark.slow
def test_saved_model_runs_with_only_tensorflow_and_tensorflow_text(small_preprocessor, tmp_path):
    export_dir = tmp_path / "export"
    module = tf.Module()
    module.preprocessor = small_preprocessor
    module.serve = tf.function(
        lambda texts: small_preprocessor(texts),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    module.tokens = tf.function(
        lambda ids: {"tokens": small_preprocessor.tokenizer.id_to_token(ids)},
        input_signature=[tf.TensorSpec([None, None], tf.int32)],
    )
    signatures = {"serving_default": module.serve, "tokens": module.tokens}
    tf.saved_model.save(module, str(export_dir), signatures=signatures)
    assert (export_dir / "assets" / "vocab.txt").is_file()
    texts = ["The [MASK] sat on the mat.", "Straße ΟΔΟΣ 中文 🥰 naïve", ""]
    script = textwrap.dedent(
        f"""
        import json, sys
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the ops)
        signatures = tf.saved_model.load({str(export_dir)!r}).signatures
        outputs = signatures["serving_default"](texts=tf.constant(json.loads(sys.stdin.read())))
        outputs = {{name: value.numpy().tolist() for name, value in outputs.items()}}
        tokens = signatures["tokens"](ids=tf.constant(outputs["input_word_ids"]))["tokens"]
        outputs["tokens"] = [[token.decode() for token in row] for row in tokens.numpy()]
        print(json.dumps(outputs))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        check=True,
    )
    served = json.loads(result.stdout.strip().splitlines()[-1])
    expected = small_preprocessor(tf.constant(texts))
    for name, tensor in expected.items():
        np.testing.assert_array_equal(served[name], tensor)
    assert served["tokens"][0][:9] == [
        "[CLS]", "the", "[MASK]", "sat", "on", "the", "mat", ".", "[SEP]"
    ]  # fmt: skip


def test_from_checkpoint_reads_casing(minilm_dir, tmp_path):
    assert BertPreprocessor.from_checkpoint(minilm_dir).lowercase
    cased_dir = tmp_path / "cased"
    cased_dir.mkdir()
    (cased_dir / "vocab.txt").write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "The", "the"]) + "\n"
    )
    cased = BertPreprocessor.from_checkpoint(cased_dir, seq_length=6)
    assert not cased.lowercase
    np.testing.assert_array_equal(cased(["The the THE"])["input_word_ids"], [[2, 5, 6, 1, 3, 0]])


def test_from_checkpoint_packs_with_the_tokens_its_tokenizer_config_names(tmp_path):
    """Before: `BertPreprocessor.from_checkpoint` packed with [CLS] and [SEP] whatever the
    checkpoint's `tokenizer_config.json` named, where `load_preprocessor` read them."""
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "<s>", "</s>", "the"]
    (tmp_path / "vocab.txt").write_text("\n".join(vocabulary) + "\n")
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps({"cls_token": "<s>", "sep_token": {"content": "</s>", "special": True}})
    )
    config = BertConfig.preset("tiny", vocab_size=len(vocabulary), max_position_embeddings=16)
    (tmp_path / "config.json").write_text(json.dumps(config.to_huggingface_dict()))
    expected = [[5, 7, 6, 0, 0]]
    for preprocessor in (
        BertPreprocessor.from_checkpoint(tmp_path, seq_length=5),
        keras_bert.load_preprocessor(tmp_path, seq_length=5),
    ):
        np.testing.assert_array_equal(preprocessor(["the"])["input_word_ids"], expected)


def test_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="vocab.txt"):
        BertPreprocessor.from_checkpoint(tmp_path)
    with pytest.raises(FileNotFoundError, match="not found"):
        WordPieceTokenizer(tmp_path / "missing.txt")
    binary = tmp_path / "vocab.bin"
    binary.write_bytes(bytes(range(256)))
    with pytest.raises(ValueError, match="not a BERT vocab.txt"):
        WordPieceTokenizer(binary)
    words = tmp_path / "words.txt"
    words.write_text("hello\nworld\n")
    with pytest.raises(ValueError, match=r"lacks \['\[PAD\]', '\[UNK\]', '\[CLS\]', '\[SEP\]'\]"):
        WordPieceTokenizer(words)
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    with pytest.raises(ValueError, match="at least 3"):
        BertPreprocessor(vocabulary, seq_length=2)
    with pytest.raises(ValueError, match="at least 5 for pairs"):
        BertPreprocessor(vocabulary, seq_length=4)((["a"], ["b"]))


def test_from_checkpoint_packs_what_the_model_reads():
    """Its default length is the model's positions where they are fewer than 128; a longer one
    and another family's checkpoint are one-line errors, as in `load_preprocessor`."""
    variants = "../shared/reference/variants"
    assert BertPreprocessor.from_checkpoint(f"{variants}/distilbert").seq_length == 64
    with pytest.raises(ConfigError, match="seq_length 65 is longer than the 64 tokens"):
        BertPreprocessor.from_checkpoint(f"{variants}/distilbert", seq_length=65)
    with pytest.raises(ConfigError, match="tokenizer is byte-pair, not WordPiece: load its pre"):
        BertPreprocessor.from_checkpoint(f"{variants}/roberta")
