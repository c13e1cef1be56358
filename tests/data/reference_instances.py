"""The tests' reference of the pretraining instances: Google's `create_pretraining_data.py`
rules in plain Python.

The pair construction walks documents sentence by sentence with a seeded `random.Random` over a
corpus held in memory. The library builds instances one way only, as TensorFlow ops
(`keras_bert.data.graph_instances`, for training, held-out evaluation, static TFRecords and
Beam); the tests hold it against this reference: the same pair counts, label balance, lengths
and masking rates.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator, Sequence

import numpy as np

from keras_bert.data.tokenized_documents import TokenizedDocument, check_documents
from keras_bert.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class Instance:
    """One training sequence before packing and masking.

    Args:
        tokens_a: ids of segment A.
        tokens_b: ids of segment B (empty without next-sentence prediction).
        next_sentence_label: 0 if B follows A in the document, 1 if B is a random span.
    """

    tokens_a: np.ndarray
    tokens_b: np.ndarray
    next_sentence_label: int


def truncate_pair(tokens_a: list, tokens_b: list, max_num_tokens: int, rng: random.Random):
    """Removes tokens from the longer segment, at a random end, until the pair fits."""
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def document_pair_instances(
    documents: Sequence[TokenizedDocument],
    document_index: int,
    seq_length: int,
    short_seq_prob: float,
    rng: random.Random,
    sentence_order: bool = False,
) -> Iterator[Instance]:
    """`create_instances_from_document` of the original code, for one document.

    With `sentence_order` (ALBERT's SOP) B is always the segment that follows A, and the two
    are swapped when the coin says so (label 1: swapped) instead of B coming from another
    document.

    Example:
    >>> documents = [[np.array([5, 6]), np.array([7])], [np.array([8, 9])]]
    >>> pairs = document_pair_instances(documents, 0, 16, 0.0, random.Random(1))
    >>> [(p.tokens_a.tolist(), p.tokens_b.tolist(), p.next_sentence_label) for p in pairs]
    [([5, 6], [7], 0)]
    """
    document = documents[document_index]
    max_num_tokens = seq_length - 3
    # Usually fill the whole sequence; sometimes (short_seq_prob) aim shorter, so that the model
    # also sees the short sequences of fine-tuning.
    target_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_length = rng.randint(2, max_num_tokens)

    chunk: list[np.ndarray] = []
    chunk_length = 0
    is_random_next: bool | None = None
    index = 0
    while index < len(document):
        chunk.append(document[index])
        chunk_length += len(document[index])
        at_document_end = index == len(document) - 1
        if at_document_end or chunk_length >= target_length:
            # The coin is tossed first. A chunk of one sentence cannot be split into A and an
            # actual next B: the original then always takes a random B, which makes more than
            # half of the labels "random" (54% on our corpus). Here such a chunk takes the next
            # sentence too (keeping its coin), and at a document's end it is dropped if the coin
            # said "actual".
            if is_random_next is None:
                is_random_next = rng.random() < 0.5
            if len(chunk) == 1 and (sentence_order or not is_random_next):
                if not at_document_end:
                    index += 1
                    continue
                chunk, chunk_length, is_random_next = [], 0, None
                index += 1
                continue
            a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            tokens_a = [int(token) for segment in chunk[:a_end] for token in segment]
            tokens_b: list[int] = []
            if is_random_next and not sentence_order:
                target_b_length = target_length - len(tokens_a)
                # Ten tries to pick another document (a corpus of one document has no other).
                for _ in range(10):
                    random_index = rng.randint(0, len(documents) - 1)
                    if random_index != document_index:
                        break
                random_document = documents[random_index]
                for segment in random_document[rng.randint(0, len(random_document) - 1) :]:
                    tokens_b += [int(token) for token in segment]
                    if len(tokens_b) >= target_b_length:
                        break
                # The sentences of the chunk after A were not used: they start the next chunk.
                index -= len(chunk) - a_end
            else:
                tokens_b = [int(token) for segment in chunk[a_end:] for token in segment]
            truncate_pair(tokens_a, tokens_b, max_num_tokens, rng)
            if sentence_order and is_random_next:
                tokens_a, tokens_b = tokens_b, tokens_a
            if tokens_a and tokens_b:
                yield Instance(
                    np.asarray(tokens_a, np.int32),
                    np.asarray(tokens_b, np.int32),
                    int(is_random_next),
                )
            chunk, chunk_length, is_random_next = [], 0, None
        index += 1


def contiguous_instances(
    documents: Sequence[TokenizedDocument], seq_length: int, document_separator: int | None
) -> Iterator[Instance]:
    """Full sentences packed up to `seq_length - 2` tokens, without sentence pairs; a sentence
    longer than that is cut at its end.

    With a `document_separator` id, packing runs on across documents with that token between
    them (RoBERTa's FULL-SENTENCES); without, every document starts a new sequence (its
    DOC-SENTENCES).

    Example:
    >>> documents = [[np.array([5, 6]), np.array([7])], [np.array([8, 9])]]
    >>> [i.tokens_a.tolist() for i in contiguous_instances(documents, 8, document_separator=3)]
    [[5, 6, 7, 3, 8, 9]]
    """
    max_num_tokens = seq_length - 2
    chunk: list[int] = []
    for document in documents:
        # A new document starts a new sequence, or (across documents) follows a separator if
        # one more token fits in front of it.
        if chunk and (document_separator is None or len(chunk) + 1 >= max_num_tokens):
            yield Instance(np.asarray(chunk, np.int32), np.zeros([0], np.int32), 0)
            chunk = []
        elif chunk:
            chunk.append(document_separator)
        for segment in document:
            if chunk and len(chunk) + len(segment) > max_num_tokens:
                yield Instance(np.asarray(chunk, np.int32), np.zeros([0], np.int32), 0)
                chunk = []
            chunk += [int(token) for token in segment[: max_num_tokens - len(chunk)]]
    if chunk:
        yield Instance(np.asarray(chunk, np.int32), np.zeros([0], np.int32), 0)


def _check_pair_settings(
    documents: Sequence[TokenizedDocument],
    next_sentence_prediction: bool = True,
    sentence_order_prediction: bool = False,
    **other_options,
) -> None:
    if next_sentence_prediction and sentence_order_prediction:
        raise ConfigError("Choose next-sentence or sentence-order prediction, not both.")
    check_documents(documents, next_sentence_prediction, sentence_order_prediction)


def create_instances(
    documents: Sequence[TokenizedDocument],
    seq_length: int,
    seed: int,
    epoch: int = 0,
    next_sentence_prediction: bool = True,
    short_seq_prob: float = 0.1,
    sentence_order_prediction: bool = False,
    document_separator: int | None = None,
) -> list[Instance]:
    """All instances of one pass over the documents, shuffled; a function of (seed, epoch).

    Args:
        documents: tokenized documents (lists of sentences' ids).
        seq_length: length of the packed sequence, [CLS] and [SEP]s included.
        seed: the run's seed.
        epoch: which pass; every pass draws new pairs (the original's `dupe_factor` passes).
        next_sentence_prediction: sentence pairs with 50% random B (BERT); if False (and no
            `sentence_order_prediction`), contiguous full sentences without pairs (RoBERTa).
        short_seq_prob: probability of a shorter target length for a document's pairs.
        sentence_order_prediction: pairs of two consecutive segments, swapped half the time
            (ALBERT's SOP; label 1: swapped).
        document_separator: without pairs, pack across documents with this token id between
            them (FULL-SENTENCES); None starts every document afresh (DOC-SENTENCES).
    """
    _check_pair_settings(documents, next_sentence_prediction, sentence_order_prediction)
    pairs = next_sentence_prediction or sentence_order_prediction
    rng = random.Random(f"{seed}/{epoch}")
    instances: list[Instance] = []
    if pairs:
        for document_index in range(len(documents)):
            instances += document_pair_instances(
                documents,
                document_index,
                seq_length,
                short_seq_prob,
                rng,
                sentence_order=sentence_order_prediction,
            )
    else:
        order = list(range(len(documents)))
        rng.shuffle(order)
        ordered = [documents[index] for index in order]
        instances += contiguous_instances(ordered, seq_length, document_separator)
    rng.shuffle(instances)
    return instances
