"""Token classification with document context: each sentence read with the text around it.

The BERT paper tagged CoNLL-2003 with "maximal document context": a sentence is fed with the
sentences before and after it in its document, and only its own words are scored. Here a
document's word pieces are cut into windows of `seq_length`: each window scores a run of whole
sentences (at most `seq_length - 2 - 2 * context_pieces` pieces, so that they keep at least
`context_pieces` of context on each side where the document has them) and fills the rest with
the pieces before and after that run. Every labelled word is scored in exactly one window, so
training sees each word once an epoch and prediction tags each word once; a sentence longer than
a window is scored over several.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

# Label id of positions that take no part in the loss: special tokens, padding, context and word
# pieces after the first of each word.
IGNORED_LABEL = -100


@dataclasses.dataclass
class TaggingWindows:
    """Packed windows (`[CLS] pieces [SEP]`, unpadded) with their labels, and for each window the
    (sentence, word) that each of its scored positions tags, in order."""

    word_ids: list[list[int]]
    labels: list[list[int]]
    scored_words: list[list[tuple[int, int]]]

    def __len__(self) -> int:
        return len(self.word_ids)


@dataclasses.dataclass
class _Piece:
    """A piece of a document: its id, and the word it starts (sentence, word) if it starts
    one, with that word's tag id."""

    piece_id: int
    starts: tuple[int, int] | None
    tag_id: int


def _document_pieces(
    sentences: Sequence[int],
    word_pieces: Sequence[Sequence[Sequence[int]]],
    tag_ids: Sequence[Sequence[int]] | None,
) -> tuple[list[_Piece], list[tuple[int, int, int]]]:
    """The pieces of a document's sentences in order, and each sentence's (index, first piece,
    end piece) among them."""
    pieces, bounds = [], []
    for sentence in sentences:
        start = len(pieces)
        for word, word_piece_ids in enumerate(word_pieces[sentence]):
            tag = tag_ids[sentence][word] if tag_ids is not None else 0
            for position, piece_id in enumerate(word_piece_ids):
                starts = (sentence, word) if position == 0 else None
                pieces.append(_Piece(int(piece_id), starts, tag))
        bounds.append((sentence, start, len(pieces)))
    return pieces, bounds


def _scored_runs(
    bounds: list[tuple[int, int, int]], scored: Sequence[bool], run_budget: int, budget: int
) -> list[tuple[int, int]]:
    """Piece ranges `[start, end)` to score: whole scored sentences grouped while they fit in
    `run_budget` pieces; a sentence longer than `budget` cut into ranges of `budget`."""
    runs: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    for sentence, start, end in bounds:
        if not scored[sentence] or start == end:
            continue
        if current is not None and current[1] == start and end - current[0] <= run_budget:
            current = (current[0], end)
            continue
        if current is not None:
            runs.append(current)
        current = (start, end)
        while current[1] - current[0] > budget:
            runs.append((current[0], current[0] + budget))
            current = (current[0] + budget, current[1])
    if current is not None:
        runs.append(current)
    return runs


def _with_context(run: tuple[int, int], length: int, budget: int) -> tuple[int, int]:
    """The window `[start, end)` around a scored run: the room left split between the pieces
    before and after it, one side taking what the other cannot use."""
    room = budget - (run[1] - run[0])
    before_available, after_available = run[0], length - run[1]
    before = min(before_available, max(room // 2, room - after_available))
    after = min(after_available, room - before)
    return run[0] - before, run[1] + after


def document_windows(
    word_pieces: Sequence[Sequence[Sequence[int]]],
    documents: Sequence[int] | None,
    seq_length: int,
    cls_id: int,
    sep_id: int,
    tag_ids: Sequence[Sequence[int]] | None = None,
    scored: Sequence[bool] | None = None,
    context_pieces: int | None = None,
) -> TaggingWindows:
    """Windows over documents that score every word of the `scored` sentences once.

    Args:
        word_pieces: per sentence, per word, its piece ids (`tokenize_split_words`).
        documents: each sentence's document (sentences of a document consecutive), or None:
            each sentence alone, with no context.
        seq_length: the packed length of a window, `[CLS]` and `[SEP]` included.
        cls_id: the id of `[CLS]` (the family's first special token).
        sep_id: the id of `[SEP]`.
        tag_ids: per sentence, per word, its tag id (None: zeros, for prediction).
        scored: which sentences to score (None: all); the others are context only.
        context_pieces: the context a scored run keeps on each side where its document has it
            (default: a quarter of the window).

    Example:
    >>> windows = document_windows(
    ...     [[[5], [6, 7]], [[8]], [[9, 10]]], documents=[0, 0, 0], seq_length=8,
    ...     cls_id=1, sep_id=2, tag_ids=[[3, 4], [3], [4]], context_pieces=1)
    >>> windows.word_ids  # sentences 0 and 1 scored in the first, 2 in the second
    [[1, 5, 6, 7, 8, 9, 10, 2], [1, 5, 6, 7, 8, 9, 10, 2]]
    >>> windows.labels
    [[-100, 3, 4, -100, 3, -100, -100, -100], [-100, -100, -100, -100, -100, 4, -100, -100]]
    >>> windows.scored_words
    [[(0, 0), (0, 1), (1, 0)], [(2, 0)]]
    """
    budget = seq_length - 2
    if budget < 1:
        raise ValueError(f"seq_length must leave room for a piece, got {seq_length}.")
    context_pieces = budget // 4 if context_pieces is None else context_pieces
    run_budget = max(1, budget - 2 * context_pieces)
    scored = [True] * len(word_pieces) if scored is None else scored
    documents = range(len(word_pieces)) if documents is None else documents
    windows = TaggingWindows([], [], [])
    for sentences in _consecutive_groups(documents):
        pieces, bounds = _document_pieces(sentences, word_pieces, tag_ids)
        for run in _scored_runs(bounds, scored, run_budget, budget):
            start, end = _with_context(run, len(pieces), budget)
            window = pieces[start:end]
            scoring = [
                piece.starts is not None and run[0] <= position < run[1]
                for position, piece in enumerate(window, start=start)
            ]
            pairs = list(zip(window, scoring, strict=True))
            windows.word_ids.append([cls_id, *(piece.piece_id for piece in window), sep_id])
            labels = [piece.tag_id if is_scored else IGNORED_LABEL for piece, is_scored in pairs]
            windows.labels.append([IGNORED_LABEL, *labels, IGNORED_LABEL])
            windows.scored_words.append([piece.starts for piece, is_scored in pairs if is_scored])
    return windows


def _consecutive_groups(documents: Sequence[int]) -> list[list[int]]:
    """Sentence indices grouped by document, as runs of equal consecutive values."""
    groups: list[list[int]] = []
    for index, document in enumerate(documents):
        if groups and documents[groups[-1][-1]] == document:
            groups[-1].append(index)
        else:
            groups.append([index])
    return groups


def windows_tags(
    windows: TaggingWindows,
    predicted_ids: Sequence[np.ndarray],
    sentence_lengths: Sequence[int],
    tag_names: Sequence[str],
) -> list[list[str]]:
    """Per sentence, the tag of each word: the prediction at its scored position, "O" for a
    word no window scores (one without pieces).

    Example:
    >>> windows = TaggingWindows([[1, 5, 2]], [[-100, 0, -100]], [[(0, 1)]])
    >>> windows_tags(windows, [np.array([1])], [2], ["O", "B-x"])
    [['O', 'B-x']]
    """
    tags = [["O"] * length for length in sentence_lengths]
    for scored_words, ids in zip(windows.scored_words, predicted_ids, strict=True):
        for (sentence, word), tag_id in zip(scored_words, ids, strict=True):
            tags[sentence][word] = tag_names[int(tag_id)]
    return tags
