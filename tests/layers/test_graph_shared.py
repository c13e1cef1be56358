"""`shared_in_graph`: built once per traced graph, and gone with the graph."""

import gc
import weakref

import tensorflow as tf

from keras_bert.layers.graph_shared import shared_in_graph


def test_a_graph_that_shared_tensors_goes_with_its_function():
    def doubled(x):
        return shared_in_graph(("doubled", x.ref()), lambda: x * 2)

    graphs = []
    for length in (3, 4):
        function = tf.function(lambda x: doubled(x) + doubled(x))
        concrete = function.get_concrete_function(tf.TensorSpec((length,)))
        assert [op.type for op in concrete.graph.get_operations()].count("Mul") == 1
        graphs.append(weakref.ref(concrete.graph))
        del function, concrete
    gc.collect()
    assert [graph() for graph in graphs] == [None, None]


def test_eagerly_each_call_builds():
    calls = []
    for _ in range(2):
        shared_in_graph(("eager",), lambda: calls.append(1))
    assert len(calls) == 2
