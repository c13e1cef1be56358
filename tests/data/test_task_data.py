"""Readers and tf.data pipelines of the fine-tuning tasks, on the real shared data."""

import json

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data.classification import (
    DataError,
    classification_dataset,
    encode_labels,
    load_tfds_classification,
    read_classification_file,
)
from keras_bert.data.token_classification import (
    read_conll,
    read_tagged_jsonl,
    tag_names_of,
    token_classification_dataset,
)
from keras_bert.models.token_classifier import IGNORED_LABEL
from keras_bert.text import BertPreprocessor


@pytest.fixture(scope="module")
def preprocessor(minilm_dir):
    return BertPreprocessor.from_checkpoint(minilm_dir, seq_length=32)


def test_reads_the_movie_snippets(data_dir):
    train = read_classification_file(data_dir / "sentiment" / "movie_snippets.train.jsonl")
    assert len(train) == 8421 and set(train.labels) == {"neg", "pos"}
    scores = read_classification_file(
        data_dir / "sentiment" / "movie_snippets.dev.jsonl", label_column="score", regression=True
    )
    assert all(-4 <= score <= 4 for score in scores.labels)


def test_csv_and_tsv_pairs(tmp_path):
    (tmp_path / "pairs.tsv").write_text("premise\thypothesis\tlabel\nA dog.\tAn animal.\tyes\n")
    (tmp_path / "pairs.csv").write_text('premise,hypothesis,label\n"A, dog.",An animal.,yes\n')
    for name in ("pairs.tsv", "pairs.csv"):
        examples = read_classification_file(
            tmp_path / name, text_column="premise", text_pair_column="hypothesis"
        )
        assert examples.text_pairs == ["An animal."] and examples.labels == ["yes"]
    with pytest.raises(DataError, match="record 1 has no label"):
        read_classification_file(
            tmp_path / "pairs.csv", text_column="premise", label_column="label "
        )


def test_unseen_labels_are_named():
    with pytest.raises(DataError, match="Labels not seen in training: 'neutral'"):
        encode_labels(["pos", "neutral"], ["neg", "pos"])


def test_classification_batches_are_packed_and_trimmed(data_dir, preprocessor):
    examples = read_classification_file(data_dir / "sentiment" / "movie_snippets.dev.jsonl")
    labels = encode_labels(examples.labels, ["neg", "pos"])
    batches = list(classification_dataset(examples.sample(40), preprocessor, labels[:40], 16))
    assert [len(batch_labels) for _, batch_labels in batches] == [16, 16, 8]
    for inputs, _ in batches:
        mask = inputs["input_mask"].numpy()
        assert mask.shape[1] == mask.sum(1).max() <= 32  # cut to the longest sequence


def test_tfds_classification_loads_offline(tmp_path):
    """The real `tfds.load` path, on a dataset built from local files."""
    import tensorflow_datasets as tfds

    class LocalSentiment(tfds.core.GeneratorBasedBuilder):
        VERSION = tfds.core.Version("1.0.0")

        def _info(self):
            return self.dataset_info_from_configs(
                features=tfds.features.FeaturesDict(
                    {
                        "sentence": tfds.features.Text(),
                        "label": tfds.features.ClassLabel(names=["negative", "positive"]),
                    }
                )
            )

        def _split_generators(self, dl_manager):
            return {"train": self._generate_examples()}

        def _generate_examples(self):
            for index, (text, label) in enumerate([("Great film.", 1), ("Dull.", 0)]):
                yield index, {"sentence": text, "label": label}

    LocalSentiment(data_dir=str(tmp_path)).download_and_prepare()
    examples, label_names = load_tfds_classification(
        "local_sentiment",
        "train",
        data_dir=tmp_path,
        features=("sentence", None, "label"),
        download=False,
    )
    assert label_names == ["negative", "positive"]
    assert sorted(zip(examples.texts, examples.labels, strict=True)) == [
        ("Dull.", "negative"),
        ("Great film.", "positive"),
    ]


def test_conll_reader_and_its_errors(tmp_path):
    path = tmp_path / "train.conll"
    path.write_text("-DOCSTART- -X- O\n\nEU NNP B-ORG\nrejects VBZ O\n\nPeter NNP B-PER\n")
    sentences = read_conll(path)
    assert sentences.words == [["EU", "rejects"], ["Peter"]]
    path.write_text("EU NNP B-ORG\nrejects\n")
    with pytest.raises(DataError, match=r"train.conll:2: expected a word and a tag"):
        read_conll(path)


def test_a_labelled_file_that_is_not_utf8_names_its_line(tmp_path):
    rows = '{"text": "fine", "label": "pos"}\n{"text": "café", "label": "pos"}\n'
    path = tmp_path / "train.jsonl"
    path.write_bytes(rows.encode("latin-1"))
    with pytest.raises(DataError, match=r"train.jsonl:2: not UTF-8 \(byte 46 is b'\\xe9'\)"):
        read_classification_file(path)
    conll = tmp_path / "train.conll"
    conll.write_bytes("Zürich NNP B-LOC\n".encode("latin-1"))
    with pytest.raises(DataError, match="train.conll:1: not UTF-8"):
        read_conll(conll)


def test_ner_labels_sit_on_first_pieces(data_dir, preprocessor):
    sentences = read_tagged_jsonl(data_dir / "ner" / "wnut16.train.jsonl")
    tag_names = tag_names_of(sentences)
    assert tag_names[0] == "O" and len(tag_names) == 21
    first = sentences.sample(3, seed=4)
    tag_ids = [[tag_names.index(tag) for tag in tags] for tags in first.tags]
    inputs, labels = next(iter(token_classification_dataset(first, preprocessor, tag_ids, 3)))
    tokenizer = preprocessor.tokenizer
    for row, (words, word_tags) in enumerate(zip(first.words, tag_ids, strict=True)):
        expected = []
        for word, tag in zip(words, word_tags, strict=True):
            pieces = tokenizer(tf.constant([word])).to_list()[0]
            expected += [tag] + [IGNORED_LABEL] * (len(pieces) - 1)
        expected = [IGNORED_LABEL] + expected[:30] + [IGNORED_LABEL]
        real = inputs["input_mask"][row].numpy() == 1
        np.testing.assert_array_equal(labels[row].numpy()[real], expected)
        assert (labels[row].numpy()[~real] == IGNORED_LABEL).all()


def test_tagged_jsonl_errors(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"tokens": ["a", "b"], "tags": ["O"]}) + "\n")
    with pytest.raises(DataError, match="bad.jsonl:1: needs lists 'tokens' and 'tags'"):
        read_tagged_jsonl(path)


def test_length_bucketing_keeps_every_example_once(data_dir, minilm_dir):
    preprocessor = BertPreprocessor.from_checkpoint(minilm_dir, seq_length=64)
    examples = read_classification_file(data_dir / "sentiment" / "movie_snippets.dev.jsonl")
    examples = examples.sample(200, seed=3)
    labels = np.arange(200)
    expected_ids = preprocessor(examples.texts)["input_word_ids"].numpy()

    def batches(length_bucketing):
        dataset = classification_dataset(
            examples, preprocessor, labels, 16, shuffle=True, length_bucketing=length_bucketing
        )
        batches = list(dataset)
        # An epoch is every bucket's batches, and the dataset says how many (`fit` counts them).
        assert int(dataset.cardinality()) == len(batches)
        return batches

    random_batches, bucketed = batches(False), batches(True)
    assert len(bucketed) > len(random_batches) == 13
    assert sorted(np.concatenate([b.numpy() for _, b in bucketed])) == list(range(200))
    padded_tokens = lambda batches: sum(x["input_mask"].numpy().size for x, _ in batches)  # noqa: E731
    assert padded_tokens(bucketed) < 0.8 * padded_tokens(random_batches)
    for inputs, batch_labels in bucketed:
        lengths = inputs["input_mask"].numpy().sum(1)
        assert lengths.max() // 8 == lengths.min() // 8 or lengths.max() == 64
        width = inputs["input_word_ids"].shape[1]
        np.testing.assert_array_equal(inputs["input_word_ids"], expected_ids[batch_labels, :width])


def test_ner_length_bucketing_packs_each_sentence_as_before(data_dir, minilm_dir):
    preprocessor = BertPreprocessor.from_checkpoint(minilm_dir, seq_length=64)
    sentences = read_conll(data_dir / "benchmarks" / "conll2003" / "eng.testa").sample(200, seed=3)
    # Every word tagged with its sentence's number: a row's labels say which sentence it is.
    tag_ids = [[number] * len(words) for number, words in enumerate(sentences.words)]

    def rows(length_bucketing):
        dataset = token_classification_dataset(
            sentences, preprocessor, tag_ids, 16, shuffle=True, length_bucketing=length_bucketing
        )
        batches = list(dataset)
        assert int(dataset.cardinality()) == len(batches)
        by_sentence, padded = {}, 0
        for inputs, labels in batches:
            lengths = inputs["input_mask"].numpy().sum(1)
            padded += lengths.size * lengths.max()
            if length_bucketing:
                assert lengths.max() // 8 == lengths.min() // 8 or lengths.max() == 64
            for ids, row, length in zip(
                inputs["input_word_ids"].numpy(), labels, lengths, strict=True
            ):
                by_sentence[int(row[1])] = (ids[:length].tolist(), row.numpy()[:length].tolist())
        return by_sentence, len(batches), padded

    (random, random_batches, random_padded), (bucketed, batches, padded) = rows(False), rows(True)
    assert random_batches == 13 < batches and sorted(bucketed) == list(range(200))
    assert bucketed == random and padded < 0.8 * random_padded


def test_ner_batches_are_packed_without_an_integer_transpose(data_dir, preprocessor):
    """oneDNN builds of TensorFlow (the default on CPUs with AVX-512) take every Transpose, and
    log "oneDNN supports DT_INT64 only on platforms with AVX-512" for one of integers, as a
    ragged concat of the rows' lengths was: the batches are packed in dense ops."""
    sentences = read_conll(data_dir / "benchmarks" / "conll2003" / "eng.testa").sample(8)
    tag_ids = [[0] * len(words) for words in sentences.words]
    dataset = token_classification_dataset(sentences, preprocessor, tag_ids, 8)
    graph = tf.compat.v1.GraphDef.FromString(dataset._as_serialized_graph().numpy())
    nodes = [*graph.node, *(node for f in graph.library.function for node in f.node_def)]
    assert "RaggedTensorToTensor" in {node.op for node in nodes}  # the map's function is read
    integer_transposes = [
        node.name
        for node in nodes
        if "Transpose" in node.op and tf.as_dtype(node.attr["T"].type).is_integer
    ]
    assert integer_transposes == []
    inputs, _ = next(iter(dataset))
    packer = preprocessor.packer
    lengths = inputs["input_mask"].numpy().sum(1)
    for word_ids, length in zip(inputs["input_word_ids"].numpy(), lengths, strict=True):
        assert word_ids[0] == packer.cls_id and word_ids[length - 1] == packer.sep_id
        assert (word_ids[length:] == packer.pad_id).all()
        assert packer.sep_id not in word_ids[1 : length - 1]
