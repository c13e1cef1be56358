"""Turning BIO tags into entity spans."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple


class EntitySpan(NamedTuple):
    """An entity over words `[start, end)`."""

    label: str
    start: int
    end: int


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
        prefix, _, tag_label = tag.partition("-")
        if prefix not in ("B", "I", "O") or (prefix != "O" and not tag_label):
            raise ValueError(f"Tag {tag!r} at position {index} is not a BIO tag.")
        continues = prefix == "I" and tag_label == label
        if label is not None and not continues:
            spans.append(EntitySpan(label, start, index))
            label = None
        if prefix != "O" and not continues:
            label, start = tag_label, index
    return spans
