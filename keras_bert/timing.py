"""Timing alternatives fairly on a busy machine: they take turns, call by call.

Timed one after the other, two alternatives meet different loads (another process starting,
the CPU's clock changing); taking turns spreads the load over both alike. Training's and
serving's `--precision auto` time their candidates this way.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Hashable, Mapping, Sequence


def interleaved_median_seconds(
    calls: Mapping[Hashable, Sequence[Callable[[], object]]], rounds: int
) -> dict[Hashable, float]:
    """The median seconds of each name's calls, the names taking turns call by call, over
    `rounds` passes after one untimed pass (tracing, oneDNN's first-call work).

    Args:
        calls: name → the calls to time (each name's cycled to the longest list's length).
        rounds: timed passes over the calls.

    Example:
    >>> seconds = interleaved_median_seconds(
    ...     {"sleep": [lambda: time.sleep(0.002)], "nothing": [lambda: None]}, rounds=3)
    >>> seconds["sleep"] > seconds["nothing"]
    True
    """
    timings = {name: [] for name in calls}
    for repeat in range(rounds + 1):
        for index in range(max(len(values) for values in calls.values())):
            for name, values in calls.items():
                call = values[index % len(values)]
                start = time.perf_counter()
                call()
                if repeat:
                    timings[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in timings.items()}
