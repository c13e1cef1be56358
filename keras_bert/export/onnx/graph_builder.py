"""`GraphBuilder`: an ONNX graph written node by node, with weights as named initializers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# The standard operator set the graphs use: LayerNormalization is standard from 17 on, and 17
# is what ONNX Runtime, Triton's ONNX Runtime backend and OpenVINO all read.
ONNX_OPSET = 17
# ONNX Runtime's contributed operators (Attention, SkipLayerNormalization, BiasGelu, ...).
MICROSOFT_DOMAIN = "com.microsoft"
ELEMENT_TYPES = {
    np.dtype("float32"): TensorProto.FLOAT,
    np.dtype("int32"): TensorProto.INT32,
    np.dtype("int64"): TensorProto.INT64,
    np.dtype("bool"): TensorProto.BOOL,
}


class GraphBuilder:
    """Collects nodes and initializers, naming every value uniquely, and makes the model.

    Example:
    >>> builder = GraphBuilder()
    >>> x = builder.input("x", TensorProto.FLOAT, ["batch", 2])
    >>> y = builder.op("Add", x, builder.constant("one", np.ones(2, np.float32)))
    >>> unused = builder.op("Relu", y)
    >>> builder.output(y, "y", TensorProto.FLOAT, ["batch", 2])
    >>> model = builder.model()  # without the Relu: no output reads it
    >>> [node.op_type for node in model.graph.node], model.graph.output[0].name
    (['Add', 'Identity'], 'y')
    """

    def __init__(self):
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self.value_infos: list[onnx.ValueInfoProto] = []
        self._used = Counter()
        self._constants: dict[tuple, str] = {}
        # By the identities of the variables: the initializer's name, and the variables (kept
        # alive, so that no other object takes their ids).
        self._weights: dict[tuple[int, ...], tuple[str, tuple]] = {}

    def unique(self, name: str) -> str:
        """`name`, or `name_2`, `name_3`, ... if taken."""
        self._used[name] += 1
        return name if self._used[name] == 1 else f"{name}_{self._used[name]}"

    def input(self, name: str, element_type: int, shape: Sequence[int | str]) -> str:
        self.inputs.append(helper.make_tensor_value_info(self.unique(name), element_type, shape))
        return name

    def output(self, value: str, name: str, element_type: int, shape: Sequence[int | str]):
        """Declares `value` as the graph output `name` (through an Identity if named otherwise)."""
        if value != name:
            self.nodes.append(helper.make_node("Identity", [value], [name], name=self.unique(name)))
        self.outputs.append(helper.make_tensor_value_info(name, element_type, shape))

    def constant(self, name: str, array: np.ndarray, keep_float64: bool = False) -> str:
        """An initializer holding `array` (float64 becomes float32 unless `keep_float64`: a
        table of float32 values that are no weights, which `parameter_count` leaves out, cast
        where it is read); small constants of equal value are shared."""
        array = np.asarray(array)
        if array.dtype == np.float64 and not keep_float64:
            array = array.astype(np.float32)
        key = None
        if array.size <= 16:
            key = (array.dtype.str, array.shape, array.tobytes())
            if key in self._constants:
                return self._constants[key]
        unique = self.unique(name)
        self.initializers.append(numpy_helper.from_array(np.array(array, order="C"), unique))
        if key is not None:
            self._constants[key] = unique
        return unique

    def weight(self, name: str, *variables) -> str:
        """An initializer holding the float32 value of Keras variables (several: joined along
        their last axis, e.g. the query, key and value kernels), written once however often it
        is asked for: what the Keras model shares (ALBERT's blocks across layers, the masked
        LM's decoder tied to the token embeddings) the graph stores once.

        Example:
        >>> import keras
        >>> builder, kernel = GraphBuilder(), keras.Variable(np.ones((2, 3)))
        >>> builder.weight("kernel", kernel), builder.weight("again", kernel)
        ('kernel', 'kernel')
        >>> builder.weight("both", kernel, kernel), len(builder.initializers)
        ('both', 2)
        """
        key = tuple(id(variable) for variable in variables)
        if key not in self._weights:
            arrays = [np.asarray(variable.numpy(), np.float32) for variable in variables]
            array = np.concatenate(arrays, axis=-1) if len(arrays) > 1 else arrays[0]
            unique = self.unique(name)
            self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), unique))
            self._weights[key] = (unique, variables)
        return self._weights[key][0]

    def op(
        self,
        op_type: str,
        *inputs: str,
        outputs: int = 1,
        domain: str = "",
        name: str | None = None,
        **attributes,
    ) -> str | list[str]:
        """Adds a node; returns its output name (a list of them if `outputs > 1`).

        The outputs of a `com.microsoft` node are declared float32 (all of this writer's are):
        ONNX's shape inference types none of them, and ONNX Runtime's quantizers calibrate and
        quantize only tensors of a known float type."""
        base = self.unique(name or op_type.lower())
        # "node:index": never the plain name of a graph input, output or initializer.
        names = [f"{base}:{index}" for index in range(outputs)]
        self.nodes.append(
            helper.make_node(op_type, list(inputs), names, name=base, domain=domain, **attributes)
        )
        if domain == MICROSOFT_DOMAIN:
            self.value_infos += [
                helper.make_tensor_value_info(output, TensorProto.FLOAT, None) for output in names
            ]
        return names[0] if outputs == 1 else names

    def contrib(self, op_type: str, *inputs: str, **attributes) -> str | list[str]:
        """A node of ONNX Runtime's `com.microsoft` domain."""
        return self.op(op_type, *inputs, domain=MICROSOFT_DOMAIN, **attributes)

    def loop(self, trip_count: str, body: Callable[[str], str], name: str) -> str:
        """A `Loop` of `trip_count` (an int64 scalar) iterations: `body(iteration)` writes the
        nodes of one iteration (an int64 scalar value) and returns its float32 value; the
        `Loop`'s output stacks them along a new first axis. The body reads what the graph
        around it holds by name (weights, activations), as ONNX subgraphs may.

        Example:
        >>> builder = GraphBuilder()
        >>> x = builder.input("x", TensorProto.FLOAT, [3])
        >>> def times(iteration):
        ...     return builder.op("Mul", x, builder.op("Cast", iteration, to=TensorProto.FLOAT))
        >>> builder.output(builder.loop(builder.constant("three", np.array(3)), times, "l"),
        ...                "y", TensorProto.FLOAT, [3, 3])
        >>> import onnxruntime
        >>> session = onnxruntime.InferenceSession(builder.model().SerializeToString())
        >>> session.run(["y"], {"x": np.array([1, 2, 3], np.float32)})[0].tolist()
        [[0.0, 0.0, 0.0], [1.0, 2.0, 3.0], [2.0, 4.0, 6.0]]
        """
        around, around_infos = self.nodes, self.value_infos
        self.nodes, self.value_infos = [], []
        iteration, going = self.unique(f"{name}/iteration"), self.unique(f"{name}/going")
        value = body(iteration)
        still_going = self.op("Identity", going)
        graph = helper.make_graph(
            self.nodes,
            f"{name}/body",
            [
                helper.make_tensor_value_info(iteration, TensorProto.INT64, []),
                helper.make_tensor_value_info(going, TensorProto.BOOL, []),
            ],
            [
                helper.make_tensor_value_info(still_going, TensorProto.BOOL, []),
                helper.make_tensor_value_info(value, TensorProto.FLOAT, None),
            ],
            value_info=self.value_infos,
        )
        self.nodes, self.value_infos = around, around_infos
        return self.op("Loop", trip_count, "", name=name, body=graph)

    def model(self, name: str = "keras_bert") -> onnx.ModelProto:
        """The model of the nodes the outputs depend on, and of the initializers they read:
        ONNX Runtime runs every node it is given, so what no output needs (a pooler under a
        token classifier, a written value a task does not return) is left out here."""
        nodes = self._nodes_outputs_need()
        read = {value for node in nodes for value in _reads(node)}
        produced = {value for node in nodes for value in node.output}
        graph = helper.make_graph(
            nodes,
            name,
            self.inputs,
            self.outputs,
            initializer=[tensor for tensor in self.initializers if tensor.name in read],
            value_info=[info for info in self.value_infos if info.name in produced],
        )
        opsets = [helper.make_opsetid("", ONNX_OPSET), helper.make_opsetid(MICROSOFT_DOMAIN, 1)]
        model = helper.make_model(graph, opset_imports=opsets, producer_name="keras_bert")
        # ONNX Runtime 1.16+ reads IR version 9; newer onnx writes 10+ by default.
        model.ir_version = 9
        return model

    def _nodes_outputs_need(self) -> list[onnx.NodeProto]:
        """The nodes some graph output depends on, in the order they were added."""
        needed = {output.name for output in self.outputs}
        kept = []
        for node in reversed(self.nodes):
            if needed.intersection(node.output):
                kept.append(node)
                needed.update(_reads(node))
        return kept[::-1]


def _reads(node: onnx.NodeProto) -> set[str]:
    """The values a node reads: its inputs, and what the nodes of its subgraphs (a `Loop`'s
    body) read from around them."""
    reads = set(node.input)
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.GRAPH:
            body = attribute.g
            inner = {value.name for value in body.input}
            inner.update(output for body_node in body.node for output in body_node.output)
            reads.update(value for body_node in body.node for value in _reads(body_node) - inner)
    return reads - {""}
