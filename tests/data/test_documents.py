import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from keras_bert.data import load_tfds_documents, read_text_documents, split_sentences


def test_read_text_documents_splits_at_blank_lines(tmp_path):
    first = tmp_path / "a.txt"
    first.write_text("One.\nTwo.\n\n\nThree.\n  \nFour.\nFive.", encoding="utf-8")
    second = tmp_path / "b.txt"
    second.write_text("Six.\n", encoding="utf-8")
    assert read_text_documents([first, second]) == [
        ["One.", "Two."],
        ["Three."],
        ["Four.", "Five."],
        ["Six."],
    ]


def test_invalid_utf8_in_a_corpus_is_replaced_as_the_tokenizers_replace_it(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes("Un café.\nFin.\n".encode("latin-1"))
    assert read_text_documents(corpus) == [["Un caf\ufffd.", "Fin."]]


def test_real_corpus_document_counts(data_dir):
    path = data_dir / "pretraining" / "wikipedia_sample.txt"
    documents = read_text_documents(path)
    assert len(documents) == 105
    # Every non-blank line is a sentence (the file has 21,319; 104 blank lines separate docs).
    lines = path.read_text(encoding="utf-8").splitlines()
    assert sum(len(document) for document in documents) == sum(1 for line in lines if line.strip())
    assert sum(len(document) for document in documents) == 21_319


def test_split_sentences():
    text = 'He left. "Why?" she asked (quietly.) Then 3 more came.\nNew line'
    assert split_sentences(text) == [
        "He left.",
        '"Why?" she asked (quietly.)',
        "Then 3 more came.",
        "New line",
    ]


def test_tfds_documents_through_tfds_load_offline(tmp_path):
    # tensorflow-datasets' builders import the `importlib_resources` backport without declaring
    # it (etils[epath] brings it); setup.cfg pins it.
    pytest.importorskip("importlib_resources")
    texts = ["First article. It has two sentences.", "Second one.\nWith a line break."]
    tfds.dataset_builders.store_as_tfds_dataset(
        name="keras_bert_test_corpus",
        version="1.0.0",
        features=tfds.features.FeaturesDict({"text": tfds.features.Text()}),
        split_datasets={"train": tf.data.Dataset.from_tensor_slices({"text": texts})},
        data_dir=tmp_path,
    )
    documents = load_tfds_documents("keras_bert_test_corpus", data_dir=tmp_path, download=False)
    assert sorted(documents) == [
        ["First article.", "It has two sentences."],
        ["Second one.", "With a line break."],
    ]
