"""Extractive QA data: SQuAD readers and the windows a long passage is split into.

A passage longer than fits beside the question is covered by overlapping windows
(`doc_stride` apart), each packed as `[CLS] question [SEP] passage window [SEP]` (or in the
layout of the family's packer: RoBERTa's `<s> question </s></s> passage window </s>`). Each window
keeps, per token, its character span in the passage and whether this window gives the token its
most context, which `keras_bert.decoding.answers` needs to map logits back to answer text.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import tensorflow as tf

from keras_bert.data.batching import batch_by_length, trim_padding
from keras_bert.data.prefetching import prefetched
from keras_bert.data.utf8_files import read_utf8
from keras_bert.errors import DataError
from keras_bert.text.packing import BertPacker, check_passage_room
from keras_bert.text.special_tokens import CLS_TOKEN, PAD_TOKEN, SEP_TOKEN

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class QuestionExample:
    """A question about a passage, with its accepted answers (none: unanswerable, SQuAD v2)."""

    id: str
    question: str
    context: str
    answers: list[str] = dataclasses.field(default_factory=list)
    answer_starts: list[int] = dataclasses.field(default_factory=list)


def _field(record: object, name: str, where: str) -> object:
    """`record[name]`; a `DataError` that names the record (`where`) if it has no such field."""
    try:
        return record[name]
    except (KeyError, TypeError, IndexError):
        raise DataError(f"{where} has no {name!r}.") from None


def read_squad(path: str | Path) -> list[QuestionExample]:
    """Reads a SQuAD v1.1 or v2.0 JSON file (`data` → `paragraphs` → `qas`).

    A record without a field SQuAD's format gives it is a `DataError` that names the record:
    its article (number and title), paragraph, question (number and id) and answer.

    Example:
    >>> examples = read_squad("../shared/data/qa/squad_v1_sample.json")
    >>> len(examples), examples[0].answers
    (5, ['Saint Bernadette Soubirous'])
    """
    path = Path(path)
    try:
        articles = json.loads(read_utf8(path))["data"]
    except (KeyError, TypeError, json.JSONDecodeError) as error:
        raise DataError(f"{path} is not a SQuAD JSON file: {error!r}") from None
    examples = []
    for article_number, article in enumerate(articles, start=1):
        title = article.get("title") if isinstance(article, dict) else None
        in_article = f"{path}: article {article_number}" + (f" ({title!r})" if title else "")
        paragraphs = _field(article, "paragraphs", in_article)
        for paragraph_number, paragraph in enumerate(paragraphs, start=1):
            in_paragraph = f"{in_article}, paragraph {paragraph_number}"
            context = _field(paragraph, "context", in_paragraph)
            for question_number, qa in enumerate(_field(paragraph, "qas", in_paragraph), 1):
                in_question = f"{in_paragraph}, question {question_number}"
                question_id = str(_field(qa, "id", in_question))
                in_question += f" (id {question_id!r})"
                answers, answer_starts = [], []
                records = [] if qa.get("is_impossible") else qa.get("answers", [])
                for answer_number, answer in enumerate(records, start=1):
                    in_answer = f"{in_question}, answer {answer_number}"
                    answers.append(_field(answer, "text", in_answer))
                    answer_starts.append(int(_field(answer, "answer_start", in_answer)))
                question = _field(qa, "question", in_question)
                examples.append(
                    QuestionExample(question_id, question, context, answers, answer_starts)
                )
    if not examples:
        raise DataError(f"{path}: the file holds no questions.")
    return examples


def load_tfds_squad(
    name: str = "squad/v1.1",
    split: str = "validation",
    data_dir: str | Path | None = None,
    download: bool = True,
) -> list[QuestionExample]:
    """Loads SQuAD (v1.1 or v2.0) through `tfds.load`."""
    import tensorflow_datasets as tfds

    dataset = tfds.load(name, split=split, data_dir=data_dir, download=download)
    examples = []
    for example in tfds.as_numpy(dataset):
        answers = example["answers"]
        examples.append(
            QuestionExample(
                id=example["id"].decode(),
                question=example["question"].decode("utf-8"),
                context=example["context"].decode("utf-8"),
                answers=[text.decode("utf-8") for text in answers["text"]],
                answer_starts=[int(start) for start in answers["answer_start"]],
            )
        )
    return examples


@dataclasses.dataclass
class QuestionWindows:
    """Packed model inputs for every window, labels, and what decoding needs to map back.

    Attributes:
        inputs: `input_word_ids`, `input_mask`, `input_type_ids`, int32 `[windows, seq]`.
        start_positions, end_positions: answer token positions, 0 (`[CLS]`) if none `[windows]`.
        example_index: the example each window belongs to `[windows]`.
        char_starts, char_ends: each token's character span in the passage, -1 for tokens that
            are not passage tokens `[windows, seq]`.
        max_context: whether this window gives the token its most context `[windows, seq]`.
    """

    inputs: dict[str, np.ndarray]
    start_positions: np.ndarray
    end_positions: np.ndarray
    example_index: np.ndarray
    char_starts: np.ndarray
    char_ends: np.ndarray
    max_context: np.ndarray

    def __len__(self) -> int:
        return len(self.example_index)

    def dataset(
        self,
        batch_size: int,
        shuffle: bool = False,
        seed: int = 0,
        length_bucketing: bool = False,
    ) -> tf.data.Dataset:
        """`(inputs, {"start_logits": positions, "end_logits": positions})` batches.

        With `length_bucketing` (training), each batch holds windows of similar length and is
        cut to its longest: SQuAD's passages mostly fill half a 384-token window, so this
        halves the tokens a step computes. Without it, every batch keeps the full length, as
        `predict` needs to join the batches' logits.
        """
        labels = {"start_logits": self.start_positions, "end_logits": self.end_positions}
        dataset = tf.data.Dataset.from_tensor_slices((self.inputs, labels))
        if shuffle:
            dataset = dataset.shuffle(len(self), seed=seed, reshuffle_each_iteration=True)
        if not length_bucketing:
            return prefetched(dataset.batch(batch_size))
        seq_length = self.inputs["input_word_ids"].shape[1]
        dataset = batch_by_length(
            dataset,
            lambda inputs, labels: tf.reduce_sum(inputs["input_mask"]),
            self.inputs["input_mask"].sum(axis=1),
            batch_size,
            seq_length,
        )
        return prefetched(dataset.map(trim_padding))


def _char_offsets(texts: Sequence[str], tokenizer) -> tuple[list, list, list]:
    """Token ids and character spans of each text (the tokenizer gives UTF-8 byte offsets)."""
    ids, byte_starts, byte_ends = tokenizer.tokenize_with_offsets(tf.constant(list(texts)))
    ids, byte_starts, byte_ends = ids.to_list(), byte_starts.to_list(), byte_ends.to_list()
    char_starts, char_ends = [], []
    for text, starts, ends in zip(texts, byte_starts, byte_ends, strict=True):
        byte_lengths = np.array([len(char.encode("utf-8")) for char in text], np.int64)
        char_of_byte = np.zeros(sum(byte_lengths) + 1, np.int64)
        char_of_byte[np.cumsum(byte_lengths)] = 1
        char_of_byte = np.cumsum(char_of_byte)
        char_starts.append(char_of_byte[starts].tolist())
        char_ends.append(char_of_byte[ends].tolist())
    return ids, char_starts, char_ends


def _answer_token_span(example, starts, ends) -> tuple[int, int] | None:
    """Passage token indices of the first answer, or None if it cannot be located."""
    text, start = example.answers[0], example.answer_starts[0]
    if example.context[start : start + len(text)] != text:
        start = example.context.find(text)
        if start < 0:
            return None
    end = start + len(text)
    covering = [
        i for i, (s, e) in enumerate(zip(starts, ends, strict=True)) if s < end and e > start
    ]
    return (covering[0], covering[-1]) if covering else None


def _window_spans(num_tokens: int, max_tokens: int, doc_stride: int) -> list[tuple[int, int]]:
    """(start, length) of the windows that cover `num_tokens` passage tokens."""
    spans, start = [], 0
    while True:
        length = min(num_tokens - start, max_tokens)
        spans.append((start, length))
        if start + length >= num_tokens:
            return spans
        start += min(length, doc_stride)


def build_question_windows(
    examples: Sequence[QuestionExample],
    tokenizer,
    seq_length: int = 384,
    doc_stride: int = 128,
    max_query_length: int = 64,
    for_training: bool = False,
    packer: BertPacker | None = None,
) -> QuestionWindows:
    """Tokenizes questions and passages and cuts passages into overlapping windows.

    Args:
        examples: the questions.
        tokenizer: a tokenizer with `tokenize_with_offsets` (WordPiece, byte-level BPE,
            SentencePiece).
        seq_length: packed length of a window.
        doc_stride: tokens between the starts of consecutive windows.
        max_query_length: questions are cut to this many tokens.
        for_training: locate answers; an answerable example whose answer is not in its passage
            raises, one whose answer text cannot be aligned to tokens is skipped with a warning.
        packer: the family's packing (`preprocessor.packer`): its special tokens, separators
            between question and passage and passage type id; default BERT's.
    """
    if not examples:
        raise DataError("No questions to build windows for.")
    if packer is None:
        packer = BertPacker(
            seq_length, *(tokenizer.token_to_id(t) for t in (CLS_TOKEN, SEP_TOKEN, PAD_TOKEN))
        )
    cls_id, sep_id, pad_id = packer.cls_id, packer.sep_id, packer.pad_id
    separators, passage_type = packer.pair_separators, packer.second_type_id
    check_passage_room(seq_length, separators, max_query_length, "max_query_length")
    question_ids = tokenizer(tf.constant([example.question for example in examples])).to_list()
    context_ids, context_starts, context_ends = _char_offsets(
        [example.context for example in examples], tokenizer
    )
    rows = {name: [] for name in ("ids", "types", "start", "end", "example", "cs", "ce", "mc")}
    skipped = 0
    for index, example in enumerate(examples):
        query = question_ids[index][:max_query_length]
        ids, starts, ends = context_ids[index], context_starts[index], context_ends[index]
        answer_span = None
        if for_training and example.answers:
            answer_span = _answer_token_span(example, starts, ends)
            if answer_span is None:
                skipped += 1
                continue
        max_tokens = seq_length - len(query) - 2 - separators
        spans = _window_spans(len(ids), max_tokens, doc_stride)
        best_window = _best_window_per_token(spans, len(ids))
        offset = len(query) + 1 + separators  # [CLS] query [SEP]
        for window_number, (window_start, length) in enumerate(spans):
            window = slice(window_start, window_start + length)
            padding = seq_length - offset - length - 1
            rows["ids"].append(
                [cls_id, *query, *[sep_id] * separators, *ids[window], sep_id] + [pad_id] * padding
            )
            rows["types"].append([0] * offset + [passage_type] * (length + 1) + [0] * padding)
            rows["cs"].append([-1] * offset + starts[window] + [-1] * (padding + 1))
            rows["ce"].append([-1] * offset + ends[window] + [-1] * (padding + 1))
            in_best_window = best_window[window_start : window_start + length] == window_number
            rows["mc"].append([False] * offset + in_best_window.tolist() + [False] * (padding + 1))
            start_position = end_position = 0
            if answer_span is not None:
                first, last = answer_span
                if window_start <= first and last < window_start + length:
                    start_position = first - window_start + offset
                    end_position = last - window_start + offset
            rows["start"].append(start_position)
            rows["end"].append(end_position)
            rows["example"].append(index)
    if skipped:
        logger.warning("Skipped %d examples whose answer is not found in the passage.", skipped)
    word_ids = np.array(rows["ids"], np.int32)
    return QuestionWindows(
        inputs={
            "input_word_ids": word_ids,
            "input_mask": (word_ids != pad_id).astype(np.int32),
            "input_type_ids": np.array(rows["types"], np.int32),
        },
        start_positions=np.array(rows["start"], np.int32),
        end_positions=np.array(rows["end"], np.int32),
        example_index=np.array(rows["example"], np.int32),
        char_starts=np.array(rows["cs"], np.int64),
        char_ends=np.array(rows["ce"], np.int64),
        max_context=np.array(rows["mc"], bool),
    )


def _best_window_per_token(spans: list[tuple[int, int]], num_tokens: int) -> np.ndarray:
    """For each passage token, the window that gives it the most context (first on ties).

    A window's context for a token is the number of tokens on its nearer side, plus 0.01 per
    token of window length, as in the original BERT SQuAD code.
    """
    positions = np.arange(num_tokens)
    scores = np.full((len(spans), num_tokens), -np.inf)
    for window, (start, length) in enumerate(spans):
        inside = (positions >= start) & (positions < start + length)
        nearer_side = np.minimum(positions - start, start + length - 1 - positions)
        scores[window, inside] = nearer_side[inside] + 0.01 * length
    return scores.argmax(axis=0)
