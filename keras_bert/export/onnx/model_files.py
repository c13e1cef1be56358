"""ONNX model files of any size: one `model.onnx` below protobuf's 2 GB limit, the weights in
ONNX external data (`model.onnx.data` beside it) above; ONNX Runtime sessions of either.

A protobuf message cannot exceed 2 GB, so a model whose weights come near it (ALBERT-xxlarge's
embeddings and blocks are 0.9 GB; a BERT with a large vocabulary or DeBERTa-v3-large's 1.7 GB
comes close) cannot be serialized whole: its tensors go to a file of their own, which ONNX
Runtime reads from the model's directory.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx

# The largest weights kept inside model.onnx: protobuf's 2 GB less room for the graph itself.
MAX_INLINE_WEIGHT_BYTES = 2**31 - 2**26
# Tensors smaller than this stay inline even in a model with external data (shapes, scalars).
EXTERNAL_TENSOR_MIN_BYTES = 1024


def weight_bytes(model: onnx.ModelProto) -> int:
    """The bytes of the model's initializers."""
    return sum(tensor.ByteSize() for tensor in model.graph.initializer)


def needs_external_data(model: onnx.ModelProto) -> bool:
    """Whether the model's weights exceed `MAX_INLINE_WEIGHT_BYTES`."""
    return weight_bytes(model) > MAX_INLINE_WEIGHT_BYTES


def save_model(model: onnx.ModelProto, path: str | Path) -> None:
    """Writes `model` to `path`, its weights into `<path>.data` beside it if they exceed
    `MAX_INLINE_WEIGHT_BYTES`; `model` itself keeps its weights.

    Example (a model of one 4 KB weight, with the threshold lowered below it):

        model_files.MAX_INLINE_WEIGHT_BYTES = 1024
        save_model(model, "export/model.onnx")  # model.onnx and model.onnx.data
    """
    path = Path(path)
    if not needs_external_data(model):
        onnx.save_model(model, str(path))
        return
    onnx.save_model(
        model,
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=f"{path.name}.data",
        size_threshold=EXTERNAL_TENSOR_MIN_BYTES,
    )
    # Saving moved the tensors' bytes out of `model`: read them back in.
    onnx.load_external_data_for_model(model, str(path.parent))


def inference_session(model: onnx.ModelProto, options=None):
    """An ONNX Runtime CPU session of `model` (through a temporary file with external data
    when its weights exceed `MAX_INLINE_WEIGHT_BYTES`)."""
    import onnxruntime

    from keras_bert.serving.graph_runtimes import session_options

    options = options or session_options()
    providers = ["CPUExecutionProvider"]
    if not needs_external_data(model):
        return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=providers)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "model.onnx"
        save_model(model, path)
        return onnxruntime.InferenceSession(str(path), options, providers=providers)


def parameter_count(model: onnx.ModelProto) -> int:
    """The float numbers of the model's weights: the elements of its float initializers with
    at least one axis (scalars are the graph's constants, not weights), as Keras'
    `count_params()` counts a model's.

    Example:
    >>> from onnx import numpy_helper
    >>> graph = onnx.helper.make_graph([], "g", [], [], initializer=[
    ...     numpy_helper.from_array(np.zeros((3, 4), np.float32), "kernel"),
    ...     numpy_helper.from_array(np.array(1.0, np.float32), "one")])
    >>> parameter_count(onnx.helper.make_model(graph))
    12
    """
    return sum(
        int(np.prod(tensor.dims))
        for tensor in model.graph.initializer
        if tensor.data_type == onnx.TensorProto.FLOAT and len(tensor.dims) > 0
    )
