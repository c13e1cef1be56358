"""The benchmarks' readers on their original files (GLUE TSVs, CoNLL-2003, SQuAD v1.1), their
quirks rebuilt in small files, and the same tasks through tensorflow-datasets (mock data)."""

import shutil

import pytest

from keras_bert.data.glue import (
    GLUE_TASKS,
    available_glue_tasks,
    glue_predictions_as_submitted,
    glue_task,
    load_tfds_glue,
    read_glue_split,
)
from keras_bert.data.squad import load_tfds_squad, read_squad
from keras_bert.data.token_classification import (
    iob2_tags,
    load_tfds_token_classification,
    read_conll,
    tag_names_of,
)
from keras_bert.decoding.bio_tags import bio_spans
from keras_bert.errors import DataError

# Train and dev records of each task in ../shared (shared/README.md).
GLUE_COUNTS = {
    "cola": (8551, 1043),
    "sst2": (67349, 872),
    "mrpc": (3668, 408),
    "stsb": (5749, 1500),
    "rte": (2490, 277),
}


@pytest.fixture(scope="module")
def glue_dir(data_dir):
    return data_dir / "benchmarks" / "glue"


@pytest.fixture(scope="module")
def conll_dir(data_dir):
    return data_dir / "benchmarks" / "conll2003"


def test_every_glue_file_reads_whole(glue_dir):
    assert [task.name for task in available_glue_tasks(glue_dir)] == list(GLUE_COUNTS)
    for name, counts in GLUE_COUNTS.items():
        splits = [read_glue_split(glue_dir, name, split) for split in ("train", "validation")]
        assert tuple(len(split) for split in splits) == counts
        task = glue_task(name)
        for split in splits:
            labels = split.examples.labels
            if task.is_regression:
                assert min(labels) == 0.0 and max(labels) == 5.0
            else:
                assert set(labels) == set(task.label_names)
            assert (split.examples.text_pairs is not None) == (task.pair_column is not None)
            assert all(split.examples.texts)


def test_glue_quirks_of_the_real_files(glue_dir):
    # MRPC's header starts with a byte-order mark; its label 1 is tfds's "equivalent".
    mrpc = read_glue_split(glue_dir, "MRPC", "validation").examples
    assert mrpc.labels[0] == "equivalent"
    assert mrpc.texts[0].startswith("He said the foodservice pie business")
    # RTE's bare quotes stay inside their field (read with CSV quoting, records would merge).
    rte = read_glue_split(glue_dir, "rte", "train").examples
    quoted = [text for text in rte.texts + rte.text_pairs if text.count('"') % 2]
    assert quoted and all("\t" not in text and "\n" not in text for text in quoted)
    # CoLA's train and dev files have no header: the sentence is the fourth column.
    cola = read_glue_split(glue_dir, "cola", "train").examples
    assert (
        cola.texts[0] == "Our friends won't buy this analysis, let alone the next one we propose."
    )


def test_glue_test_files_crlf_and_headers(glue_dir, tmp_path):
    shutil.copytree(glue_dir / "CoLA", tmp_path / "CoLA")
    (tmp_path / "CoLA" / "test.tsv").write_bytes(
        b"index\tsentence\r\n0\tThe book was read by Mary.\r\n1\tMary the book read.\r\n"
    )
    dev = (glue_dir / "CoLA" / "dev.tsv").read_bytes().replace(b"\n", b"\r\n")
    (tmp_path / "CoLA" / "dev.tsv").write_bytes(dev)
    test = read_glue_split(tmp_path, "cola", "test")
    assert not test.is_labelled and test.examples.ids == ["0", "1"]
    assert test.examples.texts == ["The book was read by Mary.", "Mary the book read."]
    crlf = read_glue_split(tmp_path, "cola", "validation").examples
    lf = read_glue_split(glue_dir, "cola", "validation").examples
    assert crlf.texts == lf.texts and crlf.labels == lf.labels


def test_glue_errors_name_the_fault(glue_dir, tmp_path):
    with pytest.raises(DataError, match="Unknown GLUE task 'squad'"):
        glue_task("squad")
    with pytest.raises(FileNotFoundError, match="no MNLI directory"):
        read_glue_split(glue_dir, "mnli", "train")
    (tmp_path / "RTE").mkdir()
    (tmp_path / "RTE" / "train.tsv").write_text(
        "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tyes\n"
    )
    with pytest.raises(DataError, match=r"labels 'yes' are not rte's"):
        read_glue_split(tmp_path, "rte", "train")
    (tmp_path / "RTE" / "train.tsv").write_text("index\tpremise\thypothesis\tlabel\n")
    with pytest.raises(DataError, match=r"no column 'sentence1', 'sentence2'"):
        read_glue_split(tmp_path, "rte", "train")
    (tmp_path / "RTE" / "train.tsv").write_text("index\tsentence1\tsentence2\tlabel\n")
    with pytest.raises(DataError, match=r"train.tsv: the file holds no examples"):
        read_glue_split(tmp_path, "rte", "train")
    for empty in ("", "\n\r\n"):
        (tmp_path / "RTE" / "train.tsv").write_text(empty)
        with pytest.raises(DataError, match=r"train.tsv: the file is empty \(rte's train split\)"):
            read_glue_split(tmp_path, "rte", "train")


def test_glue_submission_spelling():
    logits = [[2.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    assert glue_predictions_as_submitted(GLUE_TASKS["mnli"], logits) == [
        "entailment",
        "contradiction",
    ]
    assert glue_predictions_as_submitted(glue_task("SST-2"), [[0.1, 0.2]]) == ["1"]


def test_conll_2003_as_iob2(conll_dir):
    iob1 = read_conll(conll_dir / "eng.testa", iob2=False)
    iob2 = read_conll(conll_dir / "eng.testa")
    assert len(iob2) == 3250 and iob2.documents[-1] == 215  # 216 documents
    assert tag_names_of(iob2) == [
        "O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER",
    ]  # fmt: skip
    # The same entities on either scheme, and every one starts with B- in IOB2.
    for old, new in zip(iob1.tags, iob2.tags, strict=True):
        assert bio_spans(old) == bio_spans(new)
        assert all(new[span.start].startswith("B-") for span in bio_spans(new))
    assert sum(len(bio_spans(tags)) for tags in iob2.tags) == 5942  # eng.testa's entities
    assert iob2_tags(sum(iob2.tags[:50], [])) == sum(iob2.tags[:50], [])  # idempotent
    chunks = read_conll(conll_dir / "eng.testa", tag_column=2, iob2=False)
    assert chunks.words == iob2.words and chunks.tags[1][:2] == ["I-NP", "I-NP"]


def test_conll_column_errors(tmp_path):
    path = tmp_path / "bad.conll"
    path.write_text("EU NNP I-NP I-ORG\nrejects VBZ\n")
    with pytest.raises(DataError, match=r"bad.conll:2: no column 3"):
        read_conll(path, tag_column=3)


def test_squad_split_keeps_every_gold_answer(data_dir):
    dev = read_squad(data_dir / "benchmarks" / "squad" / "squad-v1.1-dev.json")
    train = read_squad(data_dir / "benchmarks" / "squad" / "squad-v1.1-train.json")
    assert (len(train), len(dev)) == (7137, 1702)
    assert min(len(example.answers) for example in dev) == 2  # gold answers as annotated
    assert sum(len(example.answers) >= 3 for example in dev) == 1686
    assert not {example.context for example in dev} & {example.context for example in train}


def test_the_same_tasks_through_tfds():
    import tensorflow_datasets as tfds

    with tfds.testing.mock_data(num_examples=5):
        train = load_tfds_glue("glue/mrpc", "train")
        test = load_tfds_glue("mrpc", "test")
        matched = load_tfds_glue("mnli", "validation")
        conll, tag_names = load_tfds_token_classification("conll2003", "validation")
        squad = load_tfds_squad("squad/v1.1", "validation")
    assert len(train) == 5 and set(train.examples.labels) <= {"not_equivalent", "equivalent"}
    assert train.examples.text_pairs and len(set(train.examples.ids)) == 5
    assert not test.is_labelled and len(test.examples.ids) == 5
    assert matched.split == "validation_matched"
    assert len(conll) == 5 and tag_names[0] == "O" and "B-MISC" in tag_names
    assert len(squad) == 5 and all(example.answers for example in squad)
