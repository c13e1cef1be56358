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
  relative-position bias), and no int8 graph.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Mapping, Sequence

import numpy as np

RUNTIMES = ("onnxruntime", "openvino")
INFERENCE_PRECISIONS = ("float32", "bfloat16")
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


@dataclasses.dataclass(frozen=True)
class GraphValue:
    """A graph input or output as a session describes it: its name and shape (symbolic axes by
    name, fixed ones as sizes)."""

    name: str
    shape: list


class OpenVinoSession:
    """`model.onnx` compiled by OpenVINO's CPU plugin, behind ONNX Runtime's session interface.

    Args:
        path: the ONNX file.
        output_axes: each output's axes, symbolic ones by name (`keras_bert.json`'s
            `output_axes`).
        threads: OpenVINO's inference threads (0: its choice, one per core).
        inference_precision: "float32" or "bfloat16" (`INFERENCE_PRECISIONS`).
    """

    def __init__(
        self,
        path: str | os.PathLike,
        output_axes: Mapping[str, Sequence],
        threads: int = 0,
        inference_precision: str = "float32",
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
        self._compiled = openvino.Core().compile_model(str(path), "CPU", config)
        self._request = self._compiled.create_infer_request()
        self._inputs = [
            GraphValue(_graph_name(port, ()), [None] * len(port.get_partial_shape()))
            for port in self._compiled.inputs
        ]
        # A port holds several names (OpenVINO adds its own): the graph's is the one to use.
        self._output_names = [_graph_name(port, output_axes) for port in self._compiled.outputs]
        missing = [name for name in self._output_names if name not in output_axes]
        if missing:
            raise ValueError(
                f"{path}: no axes given for outputs {missing}; export the model again (its "
                "keras_bert.json lists output_axes since 2026-12-01)."
            )
        self._outputs = [GraphValue(name, list(output_axes[name])) for name in self._output_names]

    def get_inputs(self) -> list[GraphValue]:
        return self._inputs

    def get_outputs(self) -> list[GraphValue]:
        return self._outputs

    def run(self, output_names: Sequence[str], feeds: Mapping[str, np.ndarray]) -> list:
        """The outputs of `output_names` (copies: the request reuses its buffers)."""
        results = self._request.infer(dict(feeds))
        by_name = dict(zip(self._output_names, results.values(), strict=True))
        return [np.array(by_name[name]) for name in output_names]


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
):
    """A session of `runtime` (`RUNTIMES`) on the ONNX file at `path` (see the module).

    Raises:
        ValueError: an unknown runtime; a reduced `inference_precision` for ONNX Runtime,
            which computes the graph in its own types.
    """
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime must be one of {RUNTIMES}, got {runtime!r}.")
    if runtime == "openvino":
        return OpenVinoSession(path, output_axes or {}, intra_op_threads, inference_precision)
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
