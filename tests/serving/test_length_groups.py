import itertools

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from keras_bert.serving.length_groups import length_groups


def _cost(groups, lengths, call_cost_tokens):
    return sum(
        len(group) * max(lengths[row] for row in group) + call_cost_tokens for group in groups
    )


def _least_cost(lengths, call_cost_tokens):
    """Every partition of the length-sorted rows into runs, the cheapest one's cost."""
    ordered = sorted(range(len(lengths)), key=lambda row: lengths[row])
    best = float("inf")
    for cuts in itertools.product([False, True], repeat=len(ordered) - 1):
        groups, group = [], [ordered[0]]
        for row, cut in zip(ordered[1:], cuts, strict=True):
            if cut:
                groups.append(group)
                group = []
            group.append(row)
        best = min(best, _cost([*groups, group], lengths, call_cost_tokens))
    return best


@given(
    st.lists(st.integers(1, 128), min_size=1, max_size=9),
    st.sampled_from([0, 8, 32, 256]),
)
def test_groups_hold_each_row_once_at_the_least_cost(lengths, call_cost_tokens):
    groups = length_groups(lengths, call_cost_tokens)
    rows = np.concatenate(groups)
    assert sorted(rows.tolist()) == list(range(len(lengths)))
    for before, after in itertools.pairwise(groups):  # runs of the rows in order of length
        assert max(lengths[row] for row in before) <= min(lengths[row] for row in after)
    assert _cost(groups, lengths, call_cost_tokens) == _least_cost(lengths, call_cost_tokens)


def test_one_group_when_a_call_costs_more_than_the_padding():
    assert [group.tolist() for group in length_groups([3, 9, 5], call_cost_tokens=100)] == [
        [0, 2, 1]
    ]
