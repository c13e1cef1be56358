"""BIO tags read in Python, as the CoNLL evaluation script reads them: the entities of one tag
sequence (`bio_spans`), for evaluation. Plain Python, so scoring needs no TensorFlow;
`keras_bert.decoding.entities` reads a batch's tags the same way in the graph."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple


class EntitySpan(NamedTuple):
    """An entity over words `[start, end)`."""

    label: str
    start: int
    end: int


def parse_bio_tag(tag: str, where: str = "Tag") -> tuple[str, str]:
    """The prefix ("B", "I" or "O") and entity type ("" for "O") of a BIO tag.

    Example:
    >>> parse_bio_tag("B-place"), parse_bio_tag("O")
    (('B', 'place'), ('O', ''))
    """
    prefix, _, type_name = tag.partition("-")
    if prefix not in ("B", "I", "O") or (prefix != "O") != bool(type_name):
        raise ValueError(f"{where} is not a BIO tag.")
    return prefix, type_name


def bio_spans(tags: Sequence[str]) -> list[EntitySpan]:
    """Entity spans of a BIO tag sequence, read as the CoNLL evaluation script reads them.

    `B-x` starts an entity; `I-x` continues an entity of type x and otherwise starts one (an
    `I-` after `O` or after another type is still an entity); `O` ends it.

    Example:
    >>> bio_spans(["B-person", "I-person", "O", "I-place", "B-place", "I-thing"])
    [EntitySpan(label='person', start=0, end=2), EntitySpan(label='place', start=3, end=4), \
EntitySpan(label='place', start=4, end=5), EntitySpan(label='thing', start=5, end=6)]
    """
    spans: list[EntitySpan] = []
    label, start = None, 0
    for index, tag in enumerate([*tags, "O"]):
        prefix, tag_label = parse_bio_tag(tag, f"Tag {tag!r} at position {index}")
        continues = prefix == "I" and tag_label == label
        if label is not None and not continues:
            spans.append(EntitySpan(label, start, index))
            label = None
        if prefix != "O" and not continues:
            label, start = tag_label, index
    return spans
