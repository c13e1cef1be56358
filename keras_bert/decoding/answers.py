"""Answer spans from start and end logits: the n-best over a passage's windows in Python
(`decode_answers`, SQuAD evaluation), and the best span of one question-context window in
TensorFlow ops (`text_answers`: tokens, packing, the model and the span's text and offsets, in
one graph), which `BertQuestionAnswerer.answer` and the export's `QuestionAnswererServing` both
compute."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
import tensorflow as tf

from keras_bert.decoding.buckets import length_buckets, trim_to_bucket
from keras_bert.text.offsets import byte_substrings, char_offsets, sanitize_utf8
from keras_bert.text.packing import BertPacker, check_passage_room, truncated_lengths

# Stands in for -inf in masked logits: softmax of an all-masked row stays finite.
MASKED_LOGIT = -1e9


@dataclasses.dataclass
class Answer:
    """The predicted answer of one question: text, character span, score (start + end logit).

    `text` is empty for "no answer" (SQuAD v2); `null_score` is the `[CLS]` score it was
    compared with.
    """

    text: str
    start: int
    end: int
    score: float
    null_score: float


def decode_answers(
    examples: Sequence,
    windows,
    start_logits: np.ndarray,
    end_logits: np.ndarray,
    n_best: int = 20,
    max_answer_length: int = 30,
    null_score_threshold: float | None = None,
) -> list[Answer]:
    """Picks the best span of every example over all its windows.

    A candidate starts and ends on passage tokens, ends at or after its start, is at most
    `max_answer_length` tokens long, and starts where its window gives the start token the most
    context. Candidates come from the `n_best` highest start and end logits of each window.

    Args:
        examples: the `QuestionExample`s the windows were built from.
        windows: their `QuestionWindows`.
        start_logits, end_logits: model outputs `[windows, seq]`.
        n_best: start and end candidates per window.
        max_answer_length: longest answer, in tokens.
        null_score_threshold: None for SQuAD v1 (always answer). Otherwise predict no answer
            when the best `[CLS]` score exceeds the best span score by more than this.
    """
    best: dict[int, Answer] = {}
    null_scores: dict[int, float] = {}
    for window in range(len(windows)):
        example = int(windows.example_index[window])
        starts, ends = start_logits[window], end_logits[window]
        null_scores[example] = min(null_scores.get(example, np.inf), float(starts[0] + ends[0]))
        char_starts, char_ends = windows.char_starts[window], windows.char_ends[window]
        for start in np.argsort(-starts)[:n_best]:
            if char_starts[start] < 0 or not windows.max_context[window, start]:
                continue
            for end in np.argsort(-ends)[:n_best]:
                if char_ends[end] < 0 or not 0 <= end - start < max_answer_length:
                    continue
                score = float(starts[start] + ends[end])
                if example not in best or score > best[example].score:
                    context = examples[example].context
                    span = int(char_starts[start]), int(char_ends[end])
                    best[example] = Answer(context[span[0] : span[1]], *span, score, 0.0)
    answers = []
    for example in range(len(examples)):
        null_score = null_scores.get(example, 0.0)
        answer = best.get(example) or Answer("", -1, -1, -np.inf, null_score)
        answer.null_score = null_score
        if null_score_threshold is not None and null_score - answer.score > null_score_threshold:
            answer = Answer("", -1, -1, answer.score, null_score)
        answers.append(answer)
    return answers


def best_answer_spans(
    start_logits: tf.Tensor,
    end_logits: tf.Tensor,
    is_context: tf.Tensor,
    max_answer_length: int,
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """The context span that maximises `p_start * p_end` (softmaxes over context tokens), at
    most `max_answer_length` tokens long, per row.

    Args:
        start_logits, end_logits: float32 `[batch, length]`.
        is_context: bool `[batch, length]`, the positions an answer may cover.
        max_answer_length: the longest answer, in tokens.

    Returns:
        `first`, `last` (int32 positions, `[batch]`) and `score` (`p_start * p_end`; 0 for a
        row without context).

    Example:
    >>> starts, ends = tf.constant([[0.0, 3.0, 1.0, 0.0]]), tf.constant([[0.0, 0.0, 0.0, 3.0]])
    >>> context = tf.constant([[False, True, True, True]])
    >>> first, last, score = best_answer_spans(starts, ends, context, max_answer_length=2)
    >>> int(first[0]), int(last[0])  # the span 1..3 would be 3 tokens long
    (2, 3)
    """
    length = tf.shape(start_logits)[1]
    log_probabilities = [
        tf.nn.log_softmax(tf.where(is_context, logits, MASKED_LOGIT), axis=-1)
        for logits in (start_logits, end_logits)
    ]
    span_scores = log_probabilities[0][:, :, tf.newaxis] + log_probabilities[1][:, tf.newaxis]
    allowed = tf.linalg.band_part(
        tf.ones([length, length], tf.bool), 0, tf.minimum(max_answer_length, length) - 1
    )
    allowed = allowed & is_context[:, :, tf.newaxis] & is_context[:, tf.newaxis]
    span_scores = tf.reshape(tf.where(allowed, span_scores, -float("inf")), [-1, length * length])
    best = tf.argmax(span_scores, axis=-1, output_type=tf.int32)
    has_context = tf.reduce_any(is_context, axis=1)
    score = tf.where(has_context, tf.exp(tf.reduce_max(span_scores, axis=-1)), 0.0)
    return best // length, best % length, score


def question_context_packer(preprocessor) -> BertPacker:
    """The packer of `[CLS] question [SEP] context [SEP]` windows (in the family's layout) of the
    preprocessor's `seq_length`: the question is cut first (`max_question_length` word pieces
    are kept by `text_answers`), the context gets what is left ("waterfall")."""
    packing = preprocessor.packer
    return BertPacker(
        seq_length=preprocessor.seq_length,
        cls_id=packing.cls_id,
        sep_id=packing.sep_id,
        pad_id=packing.pad_id,
        truncation="waterfall",
        pair_separators=packing.pair_separators,
        second_type_id=packing.second_type_id,
        name="question_context_packer",
    )


def kept_question_length(packer: BertPacker, max_question_length: int | None = None) -> int:
    """The word pieces of a question that `packer`'s windows keep: `max_question_length`, or by
    default 64 as SQuAD's windows keep, or half of what a window holds besides its special
    tokens where that is fewer. One that leaves the passage no token is a `ConfigError`.

    Example:
    >>> packer = BertPacker(seq_length=32, cls_id=101, sep_id=102)
    >>> kept_question_length(packer), kept_question_length(BertPacker(384, 101, 102))
    (14, 64)
    """
    separators = packer.pair_separators
    if max_question_length is None:
        max_question_length = min(64, (packer.seq_length - 2 - separators) // 2)
    check_passage_room(packer.seq_length, separators, max_question_length, "max_question_length")
    return max_question_length


def question_tokens(tokenizer, question: tf.Tensor, max_question_length: int) -> tf.RaggedTensor:
    """The first `max_question_length` word pieces of each question."""
    return tokenizer(question)[:, :max_question_length]


def text_answers(
    question: tf.Tensor,
    context: tf.Tensor,
    tokenizer,
    packer: BertPacker,
    run_model: Callable[[dict[str, tf.Tensor]], dict[str, tf.Tensor]],
    max_question_length: int | None = None,
    max_answer_length: int = 30,
    buckets: Sequence[int] | None = None,
) -> dict[str, tf.Tensor]:
    """The answer to each question in its context, from one window.

    The window is `packer`'s (`question_context_packer`): an answer beyond what fits of the
    context is not found. The answer is the context span of at most `max_answer_length` word
    pieces that maximises `p_start * p_end`, both softmaxes over the context tokens (no "no
    answer" option).

    Args:
        question, context: string `[batch]`.
        tokenizer: the model's tokenizer (`tokenize_with_offsets`).
        packer: the question-context packer.
        run_model: the model: packed inputs → `start_logits`, `end_logits` `[batch, length]`.
        max_question_length: word pieces of the question that are kept
            (`kept_question_length`).
        max_answer_length: the longest answer, in word pieces.
        buckets: the lengths a batch is cut to (default `length_buckets(seq_length)`).

    Returns:
        `[batch]`: `answer_text` string, `answer_score` float32 (`p_start * p_end`),
        `answer_start` and `answer_end` int32 character offsets `[start, end)` into the context.
        A context without tokens (empty, or entirely cut off) gives "", 0 and -1, -1.
    """
    seq_length = packer.seq_length
    buckets = buckets or length_buckets(seq_length)
    context = sanitize_utf8(context)
    context_tokens, token_starts, token_ends = tokenizer.tokenize_with_offsets(context)
    max_question_length = kept_question_length(packer, max_question_length)
    kept_question = question_tokens(tokenizer, question, max_question_length)
    inputs = trim_to_bucket(packer((kept_question, context_tokens)), buckets)
    outputs = run_model(inputs)
    length = tf.shape(inputs["input_mask"])[1]  # the bucket

    # The context's kept tokens follow [CLS], the kept question and the separators.
    separators = packer.pair_separators
    question_length, context_length = (
        tf.cast(kept, tf.int32)
        for kept in truncated_lengths(
            kept_question.row_lengths(),
            context_tokens.row_lengths(),
            seq_length - 2 - separators,
            "waterfall",
        )
    )
    context_offset = 1 + question_length + separators
    positions = tf.range(length)[tf.newaxis]
    is_context = (positions >= context_offset[:, tf.newaxis]) & (
        positions < (context_offset + context_length)[:, tf.newaxis]
    )
    first, last, score = best_answer_spans(
        tf.cast(outputs["start_logits"], tf.float32),
        tf.cast(outputs["end_logits"], tf.float32),
        is_context,
        max_answer_length,
    )
    has_answer = context_length > 0

    # Token positions → byte offsets in the context → code point offsets.
    first_token = tf.where(has_answer, first - context_offset, 0)
    last_token = tf.where(has_answer, last - context_offset, 0)
    token_starts = token_starts.to_tensor(0, shape=[None, seq_length])
    token_ends = token_ends.to_tensor(0, shape=[None, seq_length])
    byte_start = tf.gather(token_starts, first_token, batch_dims=1)
    byte_end = tf.gather(token_ends, last_token, batch_dims=1)
    byte_end = tf.where(has_answer, byte_end, byte_start)
    return {
        "answer_text": byte_substrings(context, byte_start, byte_end),
        "answer_score": score,
        "answer_start": tf.where(has_answer, char_offsets(context, byte_start), -1),
        "answer_end": tf.where(has_answer, char_offsets(context, byte_end), -1),
    }
