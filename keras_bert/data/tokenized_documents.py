"""Tokenized pretraining documents: a document's sentences as WordPiece ids, and the checks
that a corpus can make the instances a run asks for."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_bert.errors import DataError

TokenizedDocument = list[np.ndarray]


def tokenize_documents(
    documents: Sequence[Sequence[str]], tokenizer, batch_size: int = 2048
) -> list[TokenizedDocument]:
    """Tokenizes every sentence with a `WordPieceTokenizer`; drops sentences with no tokens and
    documents with no sentences left.

    Example:
    >>> from keras_bert.text import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "cat"])
    >>> tokenize_documents([["a cat", ""], [""]], tokenizer)
    [[array([5, 6], dtype=int32)]]
    """
    sentences = [sentence for document in documents for sentence in document]
    ids: list[np.ndarray] = []
    for start in range(0, len(sentences), batch_size):
        batch = tokenizer(tf.constant(sentences[start : start + batch_size]))
        ids += [np.asarray(row, np.int32) for row in batch.numpy()]
    tokenized, position = [], 0
    for document in documents:
        pieces = [piece for piece in ids[position : position + len(document)] if len(piece)]
        position += len(document)
        if pieces:
            tokenized.append(pieces)
    return tokenized


def check_documents(
    documents: Sequence[TokenizedDocument],
    next_sentence_prediction: bool,
    sentence_order_prediction: bool = False,
) -> None:
    """Raises a `DataError` when the documents cannot make the instances asked for.

    Next-sentence prediction draws its random B from another document and its true B from the
    same one, so it needs two documents and a document of two sentences or more; without
    that every label would be "random" (or none could be made) and NSP would teach nothing.
    Sentence-order prediction needs a document of two sentences or more.

    Example:
    >>> documents = [[np.array([5, 6]), np.array([7])], [np.array([8])]]
    >>> check_documents(documents, next_sentence_prediction=True)  # two documents, one pair
    """
    if not documents:
        raise DataError("No text to pretrain on: the input has no non-empty sentence.")
    multi_sentence = sum(len(document) >= 2 for document in documents)
    if sentence_order_prediction and not multi_sentence:
        raise DataError(
            "Sentence-order prediction needs a document with two sentences or more; the input "
            f"has {len(documents)} document(s) of one sentence. Add text, or switch it off "
            "(--sentence-order-prediction false)."
        )
    if not next_sentence_prediction:
        return
    if len(documents) < 2 or not multi_sentence:
        raise DataError(
            "Next-sentence prediction needs at least two documents with two sentences (documents "
            "are separated by blank lines); the input has "
            f"{len(documents)} document(s), {multi_sentence} of them with two sentences or more. "
            "Add text, or switch it off (--next-sentence-prediction false)."
        )
