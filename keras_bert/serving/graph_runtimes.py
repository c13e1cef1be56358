"""The engines that run an ONNX export's `model.onnx` for `OnnxModel`: ONNX Runtime or OpenVINO.

Both are sessions of one interface, ONNX Runtime's own (`get_inputs()`, `get_outputs()`, each
with a `name` and a `shape` whose symbolic axes are named, and `run(output_names, feeds)`), so
that `OnnxModel` and the export's checks run either alike:

- "onnxruntime": ONNX Runtime's CPU session, all graph optimizations, the com.microsoft fused
  operators the export writes (`Attention`, `SkipLayerNormalization`, `BiasGelu`), and the int8
  graphs.
- "openvino": OpenVINO's CPU plugin on the same float32 file, with an inference precision:
  "float32", or "bfloat16", which OpenVINO computes on AMX or AVX512_BF16 units (elsewhere it
  emulates bfloat16, slower than float32). One stream, `threads` threads, tuned for latency.
  OpenVINO names no symbolic axes, so the export's `keras_bert.json` gives them
  (`output_axes`). It reads every float32 graph but DeBERTa's (a `MultiHeadAttention` with a
  relative-position bias), and no int8 graph. A request of one row up to `ONE_ROW_LIMIT`
  tokens runs through a graph compiled for a fixed width (`one_row_lengths`), its ids padded
  with zeros past the mask and its outputs cut back to the row's width: OpenVINO's graph of
  dynamic shape re-plans its memory and shapes whenever the width changes. On the Xeon with
  AMX (2026-12-06), MiniLM-L6 in bfloat16 on the sentiment dev sentences (27 ids at the
  median) took 2.0 ms a call in the dynamic graph and 1.5-1.75 ms in the fixed ones (a bound
  on the dynamic width: 2.0), for 53 MB of memory a width. A one-row request's ids are
  written into the graph's own input buffers and its outputs read from its own, instead of
  handing OpenVINO new arrays each call (which it wraps and binds anew): 8-9% off the call
  (paired, call by call, on the Xeon with AMX model 207, 2026-12-06).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

RUNTIMES = ("onnxruntime", "openvino")
INFERENCE_PRECISIONS = ("float32", "bfloat16")
# The graph's symbolic axes, as the ONNX writer names them: a tensor's rows and its positions.
BATCH, SEQUENCE = "batch", "sequence"
# OpenVINO's one-row graphs (`one_row_lengths`): widths in steps of 16 tokens up to 64, a
# sentence's. Steps of 8 were slower on the sentences above (1.7-1.8 ms: more graphs to switch
# between, twice the memory); every row padded to 64 took 2.1 ms, so past that the padding's
# arithmetic outweighs the re-planning it saves.
ONE_ROW_STEP, ONE_ROW_LIMIT = 16, 64
# OpenVINO's names of `INFERENCE_PRECISIONS`.
_OPENVINO_PRECISIONS = {"float32": "f32", "bfloat16": "bf16"}


def session_options(intra_op_threads: int = 0, inter_op_threads: int = 0, spinning: bool = True):
    """ONNX Runtime session options: all graph optimizations, the given thread counts (0:
    ONNX Runtime's choice, one per physical core) and whether idle intra-op threads spin
    (fastest on a machine of its own; `False` suffers less on shared cores)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = intra_op_threads
    options.inter_op_num_threads = inter_op_threads
    options.add_session_config_entry("session.intra_op.allow_spinning", str(int(spinning)))
    return options


def one_row_lengths(seq_length: int, longest_input: int) -> list[int]:
    """The widths of OpenVINO's one-row graphs for a model that packs `seq_length` tokens and
    reads at most `longest_input`: multiples of `ONE_ROW_STEP` that cover rows up to
    `seq_length` or `ONE_ROW_LIMIT`, whichever is shorter, none wider than `longest_input`.

    Example:
    >>> one_row_lengths(128, 512), one_row_lengths(50, 50), one_row_lengths(32, 512)
    ([16, 32, 48, 64], [16, 32, 48, 50], [16, 32])
    """
    covered = min(seq_length, ONE_ROW_LIMIT)
    steps = range(ONE_ROW_STEP, covered + ONE_ROW_STEP, ONE_ROW_STEP)
    return sorted({min(length, longest_input) for length in steps})


@dataclasses.dataclass(frozen=True)
class GraphValue:
    """A graph input or output as a session describes it: its name and shape (symbolic axes by
    name, fixed ones as sizes)."""

    name: str
    shape: list


@dataclasses.dataclass(frozen=True)
class _OneRowGraph:
    """An OpenVINO request of one fixed width and its own buffers: `inputs` by name (NumPy
    views to write ids into), `outputs` in the graph's order (tensors to read after `infer`)."""

    request: Any
    inputs: dict[str, np.ndarray]
    outputs: list


class OpenVinoSession:
    """`model.onnx` compiled by OpenVINO's CPU plugin, behind ONNX Runtime's session interface.

    Args:
        path: the ONNX file.
        output_axes: each output's axes, symbolic ones by name (`keras_bert.json`'s
            `output_axes`).
        threads: OpenVINO's inference threads (0: its choice, one per core).
        inference_precision: "float32" or "bfloat16" (`INFERENCE_PRECISIONS`).
        one_row_lengths: the widths to compile one-row graphs for (`one_row_lengths`; none
            for a graph without an `input_mask`): a one-row request no wider than the widest
            runs through the narrowest that holds it.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        output_axes: Mapping[str, Sequence],
        threads: int = 0,
        inference_precision: str = "float32",
        one_row_lengths: Sequence[int] = (),
    ):
        import openvino

        if inference_precision not in INFERENCE_PRECISIONS:
            raise ValueError(
                f"inference_precision must be one of {INFERENCE_PRECISIONS}, got "
                f"{inference_precision!r}."
            )
        self.inference_precision = inference_precision
        config = {
            "NUM_STREAMS": 1,
            "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_PRECISION_HINT": _OPENVINO_PRECISIONS[inference_precision],
        }
        if threads:
            config["INFERENCE_NUM_THREADS"] = threads
        core = openvino.Core()
        model = core.read_model(str(path))
        self._request = core.compile_model(model, "CPU", config).create_infer_request()
        self._inputs = [
            GraphValue(_graph_name(port, ()), [None] * len(port.get_partial_shape()))
            for port in model.inputs
        ]
        # A port holds several names (OpenVINO adds its own): the graph's is the one to use.
        self._output_names = [_graph_name(port, output_axes) for port in model.outputs]
        # Each width's graph, narrowest first: the graph reshaped to one row of it, compiled,
        # and its request's own buffers, inputs by name and outputs in the graph's order.
        masked = "input_mask" in {graph_input.name for graph_input in self._inputs}
        self._one_row_graphs: dict[int, _OneRowGraph] = {}
        for length in sorted(set(one_row_lengths)) if masked else ():
            shaped = model.clone()
            shaped.reshape({port.get_any_name(): [1, length] for port in shaped.inputs})
            request = core.compile_model(shaped, "CPU", config).create_infer_request()
            self._one_row_graphs[length] = _OneRowGraph(
                request,
                {graph_input.name: request.get_tensor(graph_input.name).data
                 for graph_input in self._inputs},
                [request.get_output_tensor(index) for index in range(len(model.outputs))],
            )  # fmt: skip
        missing = [name for name in self._output_names if name not in output_axes]
        if missing:
            raise ValueError(
                f"{path}: no axes given for outputs {missing}; export the model again (its "
                "keras_bert.json lists output_axes since 2026-12-01)."
            )
        self._output_axes = {name: list(output_axes[name]) for name in self._output_names}
        self._outputs = [GraphValue(name, self._output_axes[name]) for name in self._output_names]

    @property
    def one_row_lengths(self) -> list[int]:
        """The widths of the one-row graphs compiled, narrowest first."""
        return list(self._one_row_graphs)

    def get_inputs(self) -> list[GraphValue]:
        return self._inputs

    def get_outputs(self) -> list[GraphValue]:
        return self._outputs

    def run(self, output_names: Sequence[str], feeds: Mapping[str, np.ndarray]) -> list:
        """The outputs of `output_names` (copies: the request reuses its buffers)."""
        rows, width = next(iter(feeds.values())).shape
        widths = self._one_row_graphs if rows == 1 else ()
        length = next((length for length in widths if length >= width), None)
        if length is None:
            results = list(self._request.infer(dict(feeds)).values())
        else:
            graph = self._one_row_graphs[length]
            for name, ids in feeds.items():
                graph.inputs[name][:, :width] = ids
                graph.inputs[name][:, width:] = 0
            graph.request.infer()
            results = [output.data for output in graph.outputs]
        by_name = dict(zip(self._output_names, results, strict=True))
        return [
            np.array(by_name[name][_cut(self._output_axes[name], width)]) for name in output_names
        ]


def _cut(axes: Sequence, width: int) -> tuple[slice, ...]:
    """The slices of an output with `axes` that keep the first `width` positions."""
    return tuple(slice(0, width) if axis == SEQUENCE else slice(None) for axis in axes)


def _graph_name(port, known: Collection[str]) -> str:
    """The name of an OpenVINO port that is among `known` (the graph's own), else any."""
    return next((name for name in sorted(port.get_names()) if name in known), port.any_name)


def graph_session(
    path: str | os.PathLike,
    runtime: str = "onnxruntime",
    intra_op_threads: int = 0,
    inter_op_threads: int = 0,
    spinning: bool = True,
    inference_precision: str = "float32",
    output_axes: Mapping[str, Sequence] | None = None,
    one_row_lengths: Sequence[int] = (),
):
    """A session of `runtime` (`RUNTIMES`) on the ONNX file at `path` (see the module).

    Raises:
        ValueError: an unknown runtime; a reduced `inference_precision` for ONNX Runtime,
            which computes the graph in its own types.
    """
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime must be one of {RUNTIMES}, got {runtime!r}.")
    if runtime == "openvino":
        return OpenVinoSession(
            path, output_axes or {}, intra_op_threads, inference_precision, one_row_lengths
        )
    if inference_precision != "float32":
        raise ValueError(
            f"ONNX Runtime computes the graph in its own types; inference_precision "
            f"{inference_precision!r} is OpenVINO's (runtime='openvino')."
        )
    import onnxruntime

    return onnxruntime.InferenceSession(
        str(path),
        session_options(intra_op_threads, inter_op_threads, spinning),
        providers=["CPUExecutionProvider"],
    )
