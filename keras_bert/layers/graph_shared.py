"""Tensors that every layer of a model would compute alike, built once in the graph being traced
and read by the layers after the first.

ModernBERT's 22 blocks rotate by the same position tables and its 14 window layers mask the
same window; built in each layer, a trace holds one copy per layer (Grappler merges them, but
only after the trace and its first optimisation have held them all).
"""

from collections.abc import Callable, Hashable
from typing import TypeVar

import tensorflow as tf

Built = TypeVar("Built")

# The attribute of a graph that holds what `shared_in_graph` built in it, by key: on the graph
# itself, so that it goes when the graph goes (the tensors it holds reference their graph, so a
# `WeakKeyDictionary` of graphs would keep every graph, and each model call traced in it, alive).
_BUILT = "_keras_bert_shared_in_graph"


def shared_in_graph(key: tuple[Hashable, ...], build: Callable[[], Built]) -> Built:
    """`build()`'s result, built once per traced graph and `key` (and replica: each replica of a
    `tf.distribute` strategy builds its own, on its device); eagerly, built at every call.

    `key` must determine what `build` computes: the tensors it reads go in as `tensor.ref()`.

    Example:
    >>> calls = []
    >>> @tf.function
    ... def twice(x):
    ...     first = shared_in_graph(("double", x.ref()), lambda: calls.append(1) or x * 2)
    ...     return first + shared_in_graph(("double", x.ref()), lambda: calls.append(1) or x * 2)
    >>> twice(tf.constant(1)).numpy().item(), len(calls)
    (4, 1)
    """
    if tf.executing_eagerly():
        return build()
    replica = tf.distribute.get_replica_context()
    replica = replica and tf.get_static_value(replica.replica_id_in_sync_group)
    graph = tf.compat.v1.get_default_graph()
    built = getattr(graph, _BUILT, None)
    if built is None:
        built = {}
        setattr(graph, _BUILT, built)
    key = (*key, None if replica is None else int(replica))
    if key not in built:
        built[key] = build()
    return built[key]
