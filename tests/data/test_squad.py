"""SQuAD reading, passage windows and span decoding, on real passages."""

import json

import numpy as np
import pytest

from keras_bert.data.squad import QuestionExample, build_question_windows, read_squad
from keras_bert.decoding.answers import decode_answers
from keras_bert.errors import ConfigError, DataError
from keras_bert.metrics import squad_scores
from keras_bert.text import WordPieceTokenizer


@pytest.fixture(scope="module")
def tokenizer(minilm_dir):
    return WordPieceTokenizer(minilm_dir / "vocab.txt")


@pytest.fixture(scope="module")
def long_passage(data_dir):
    """The first ~60 sentences of a real Wikipedia article, with some non-ASCII text."""
    lines = (data_dir / "pretraining" / "wikipedia_sample.txt").read_text("utf-8").splitlines()
    passage = " ".join(line for line in lines[:60] if line.strip())
    return "Café naïveté — " + passage


def example_for(passage: str, answer: str) -> QuestionExample:
    return QuestionExample("q", "What is this about?", passage, [answer], [passage.index(answer)])


def oracle_logits(windows):
    """Logits that point at the labelled span of each window ([CLS] where it has none)."""
    start_logits = np.full(windows.inputs["input_word_ids"].shape, -10.0, np.float32)
    end_logits = start_logits.copy()
    rows = np.arange(len(windows))
    start_logits[rows, windows.start_positions] = 10.0
    end_logits[rows, windows.end_positions] = 10.0
    return start_logits, end_logits


def test_reads_squad_v1_sample(data_dir):
    examples = read_squad(data_dir / "qa" / "squad_v1_sample.json")
    assert len(examples) == 5
    first = examples[0]
    assert first.answers == ["Saint Bernadette Soubirous"]
    assert first.context[first.answer_starts[0] :].startswith("Saint Bernadette Soubirous")


def test_sample_round_trips_through_windows_and_decoding(data_dir, tokenizer):
    examples = read_squad(data_dir / "qa" / "squad_v1_sample.json")
    windows = build_question_windows(examples, tokenizer, for_training=True)
    answers = decode_answers(examples, windows, *oracle_logits(windows))
    predictions = {
        example.id: answer.text for example, answer in zip(examples, answers, strict=True)
    }
    truths = {example.id: example.answers for example in examples}
    assert squad_scores(predictions, truths)["exact_match"] == 100.0


def test_windows_cover_a_long_passage(long_passage, tokenizer):
    example = example_for(long_passage, "Anarchism")
    windows = build_question_windows(
        [example], tokenizer, seq_length=128, doc_stride=48, max_query_length=16
    )
    assert len(windows) > 5
    assert windows.inputs["input_word_ids"].shape == (len(windows), 128)
    # Every passage token has its most context in exactly one window.
    passage_tokens = windows.char_starts >= 0
    assert (windows.max_context <= passage_tokens).all()
    spans = {
        (int(s), int(e))
        for s, e in zip(
            windows.char_starts[windows.max_context],
            windows.char_ends[windows.max_context],
            strict=True,
        )
    }
    all_spans = {
        (int(s), int(e))
        for s, e in zip(
            windows.char_starts[passage_tokens], windows.char_ends[passage_tokens], strict=True
        )
    }
    assert spans == all_spans
    assert windows.max_context.sum() == len(tokenizer([long_passage]).to_list()[0])
    # Segment ids: 0 on [CLS] question [SEP], 1 on the passage window and its [SEP].
    types, mask = windows.inputs["input_type_ids"], windows.inputs["input_mask"]
    assert ((types == 1) <= (mask == 1)).all()


@pytest.mark.parametrize("where", ["across_window_boundary", "near_the_end", "accented_start"])
def test_answers_anywhere_in_a_long_passage(long_passage, tokenizer, where):
    settings = {"seq_length": 128, "doc_stride": 48, "max_query_length": 16}
    probe = build_question_windows([example_for(long_passage, "the")], tokenizer, **settings)
    if where == "across_window_boundary":
        # Five words centred on the last passage token of the first window.
        boundary = probe.char_ends[0][probe.char_ends[0] >= 0].max()
        start = long_passage.rfind(" ", 0, boundary - 20) + 1
        end = long_passage.find(" ", boundary + 20)
        answer, start_char = long_passage[start:end], start
    elif where == "near_the_end":
        answer = " ".join(long_passage.split()[-4:])
        start_char = len(long_passage) - len(answer)
    else:
        answer, start_char = "Café naïveté", 0
    example = QuestionExample("q", "Where?", long_passage, [answer], [start_char])
    windows = build_question_windows([example], tokenizer, for_training=True, **settings)
    labelled = np.flatnonzero(windows.start_positions)
    assert len(labelled) >= 1
    for window in labelled:
        start, end = windows.start_positions[window], windows.end_positions[window]
        span = windows.char_starts[window, start], windows.char_ends[window, end]
        assert long_passage[span[0] : span[1]] == answer
    (decoded,) = decode_answers([example], windows, *oracle_logits(windows))
    assert decoded.text == answer
    assert (decoded.start, decoded.end) == (start_char, start_char + len(answer))


def test_no_answer_needs_the_threshold(long_passage, tokenizer):
    example = QuestionExample("q", "Is there an answer?", long_passage)
    windows = build_question_windows(
        [example],
        tokenizer,
        seq_length=128,
        doc_stride=64,
        max_query_length=16,
        for_training=True,
    )
    assert (windows.start_positions == 0).all() and (windows.end_positions == 0).all()
    start_logits, end_logits = oracle_logits(windows)
    (v2_answer,) = decode_answers(
        [example], windows, start_logits, end_logits, null_score_threshold=0.0
    )
    assert v2_answer.text == "" and v2_answer.null_score == 20.0
    (v1_answer,) = decode_answers([example], windows, start_logits, end_logits)
    assert v1_answer.text != ""


def test_long_question_is_cut_and_empty_passage_has_no_answer(tokenizer):
    question = " ".join(["why"] * 100)
    examples = [
        QuestionExample("a", question, "A short passage."),
        QuestionExample("b", "Why?", ""),
    ]
    windows = build_question_windows(examples, tokenizer, seq_length=96, max_query_length=20)
    first_sep = np.argmax(windows.inputs["input_word_ids"][0] == tokenizer.token_to_id("[SEP]"))
    assert first_sep == 21  # [CLS] + 20 question tokens
    assert list(windows.example_index) == [0, 1]
    assert (windows.char_starts[1] < 0).all()
    answers = decode_answers(examples, windows, *oracle_logits(windows))
    assert answers[1].text == ""


def test_bad_windowing_settings(tokenizer):
    with pytest.raises(ConfigError, match="leaves no room for the passage"):
        build_question_windows(
            [QuestionExample("a", "q", "c")], tokenizer, seq_length=60, max_query_length=64
        )
    with pytest.raises(DataError, match="No questions"):
        build_question_windows([], tokenizer)


def test_training_batches_hold_windows_of_similar_length(data_dir, tokenizer):
    examples = read_squad(data_dir / "benchmarks" / "squad" / "squad-v1.1-dev.json")[:300]
    windows = build_question_windows(examples, tokenizer, seq_length=384, for_training=True)
    starts, dataset = [], windows.dataset(16, shuffle=True, length_bucketing=True)
    batches = list(dataset)
    assert int(dataset.cardinality()) == len(batches)  # what `fit` counts as an epoch
    for inputs, labels in batches:
        lengths = inputs["input_mask"].numpy().sum(1)
        assert inputs["input_word_ids"].shape[1] == lengths.max()  # cut to the longest
        assert lengths.max() // 8 == lengths.min() // 8 or lengths.max() == 384
        starts += labels["start_logits"].numpy().tolist()
    # Every window once, its label with it.
    assert sorted(starts) == sorted(windows.start_positions.tolist())


@pytest.mark.parametrize(
    "field, message",
    [
        ("id", "article 1 ('University_of_Notre_Dame'), paragraph 1, question 2 has no 'id'."),
        ("question", "paragraph 1, question 2 (id '5733be284776f4190066117e') has no 'question'."),
        (
            "answer_start",
            "question 2 (id '5733be284776f4190066117e'), answer 1 has no 'answer_start'.",
        ),
    ],
)
def test_a_record_without_a_field_is_an_error_that_names_it(data_dir, tmp_path, field, message):
    squad = json.loads((data_dir / "qa" / "squad_v1_sample.json").read_text("utf-8"))
    question = squad["data"][0]["paragraphs"][0]["qas"][1]
    del (question["answers"][0] if field == "answer_start" else question)[field]
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(squad), "utf-8")
    with pytest.raises(DataError) as error:
        read_squad(path)
    assert str(error.value).startswith(str(path)) and str(error.value).endswith(message)
