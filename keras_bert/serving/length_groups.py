"""Rows of one batch split into groups of similar length, so that each group is padded only to
its own longest row.

A batch padded to its longest row computes every padding position; in a batch of 32 movie
snippets that is about half the work. Each group is one more call of the runtime, which costs
about as much as a few dozen tokens, so `length_groups` cuts the length-sorted rows where the
padding saved outweighs that call: the cheapest partition of `count × longest + call cost` per
group (an exact search, quadratic in the rows: a batch holds at most a few hundred).

Measured on `OnnxModel` float32 (the sentiment classifier, MiniLM-L6, 2 threads, the dev
snippets in batches of 32; AMD EPYC, AVX2 only): padded to the batch's longest 112-115
sentences/s; grouped at a call cost of 8, 16, 32 and 64 tokens 184, 185, 184 and 179; one
group per length (0) 157; at 256 and 1,024 tokens, 161 and 111 (`CALL_COST_TOKENS`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# What one more runtime call costs, in tokens of padded work (the measurement above).
CALL_COST_TOKENS = 32


def length_groups(
    lengths: Sequence[int], call_cost_tokens: int = CALL_COST_TOKENS
) -> list[np.ndarray]:
    """Row indices grouped so that the padded work plus the calls is least: each group is a run
    of rows in order of length, and every row is in exactly one group.

    Args:
        lengths: each row's real tokens.
        call_cost_tokens: the cost of one group's call, in tokens.

    Example:
    >>> [group.tolist() for group in length_groups([5, 60, 6, 58], call_cost_tokens=32)]
    [[0, 2], [3, 1]]
    """
    order = np.argsort(np.asarray(lengths), kind="stable")
    ordered = np.asarray(lengths)[order]
    count = len(ordered)
    # cost[end]: the least cost of the first `end` rows; start[end]: where its last group starts
    cost = np.full(count + 1, np.inf)
    cost[0] = 0.0
    start = np.zeros(count + 1, dtype=int)
    for end in range(1, count + 1):
        firsts = np.arange(end)
        candidates = cost[:end] + (end - firsts) * ordered[end - 1] + call_cost_tokens
        start[end] = np.argmin(candidates)
        cost[end] = candidates[start[end]]
    groups, end = [], count
    while end:
        groups.append(order[start[end] : end])
        end = start[end]
    return groups[::-1]
