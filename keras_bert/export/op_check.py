"""Checks that every op of a SavedModel exists in the TensorFlow Serving release we target.

Facts about TensorFlow Serving 2.21 (the `tensorflow/serving:2.21.0` image) that this relies on:

- The model server links the core TensorFlow 2.21 ops and kernels (`//tensorflow/core`), plus
  `@org_tensorflow_text//tensorflow_text:ops_lib` (every tensorflow-text 2.21 op) and the
  TensorFlow Decision Forests inference op (`SUPPORTED_TENSORFLOW_OPS` in
  `tensorflow_serving/model_servers/BUILD`). Nothing else: ops of tensorflow-addons,
  tensorflow-io, tensorflow-recommenders-addons or a user's `tf.load_op_library` are missing
  and loading fails with "Op type not registered".
- It has no Python, so ops that call back into Python (`tf.py_function`, `tf.numpy_function`)
  are registered in a Python process but cannot run in the server.
- Every op library of the tensorflow-text 2.21 wheel (`tensorflow_text/python/ops/_*.so`) is a
  dependency of `ops_lib`, so the wheel's registry is the server's. The family's tokenizers
  rely on this: SentencePiece (ALBERT, DeBERTa-v3) runs `TFText>FastSentencepieceTokenize`
  (`:fast_sentencepiece_tokenizer_cc`) and ICU's `NormalizeUTF8`; byte-level BPE (RoBERTa) is
  core ops only (`StaticRegexReplace`, `StringSplitV2`, `UnicodeDecode`, `Unique`, hash tables
  and a `While` loop). tensorflow-text's `SentencepieceOp` resource is not used in exports.

The available ops are therefore read from the op registry of a fresh Python process that
imports only `tensorflow` and `tensorflow_text` (this process may have loaded other op
libraries), minus the Python-callback ops.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from tensorflow.core.protobuf import saved_model_pb2

TF_SERVING_RELEASE = "TensorFlow Serving 2.21 (tensorflow/serving:2.21.0)"
# Registered in a Python process, but they run Python code, which the model server lacks.
PYTHON_ONLY_OPS = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc"})

_REGISTRY_SCRIPT = """
import json
import tensorflow
import tensorflow_text
from tensorflow.core.framework import op_def_pb2
from tensorflow.python.client import pywrap_tf_session

buffer = pywrap_tf_session.TF_GetAllOpList()
ops = op_def_pb2.OpList.FromString(pywrap_tf_session.TF_GetBuffer(buffer))
print(json.dumps(sorted(op.name for op in ops.op)))
"""


class UnsupportedOpError(ValueError):
    """A SavedModel uses ops that the targeted TensorFlow Serving release does not have."""


def _read_saved_model(export_dir: str | os.PathLike) -> saved_model_pb2.SavedModel:
    saved_model = saved_model_pb2.SavedModel()
    saved_model.ParseFromString((Path(export_dir) / "saved_model.pb").read_bytes())
    return saved_model


def saved_model_ops(export_dir: str | os.PathLike) -> set[str]:
    """The op types used by a SavedModel: every graph's nodes and every library function's.

    Calls of library functions (a node whose op is a function's name) are not ops.
    """
    saved_model = _read_saved_model(export_dir)
    ops = set()
    for meta_graph in saved_model.meta_graphs:
        graph = meta_graph.graph_def
        function_names = {function.signature.name for function in graph.library.function}
        ops.update(node.op for node in graph.node)
        for function in graph.library.function:
            ops.update(node.op for node in function.node_def)
        ops -= function_names
    return ops


def xla_compiled_functions(export_dir: str | os.PathLike) -> list[str]:
    """The SavedModel's functions that must be XLA-compiled (`tf.function(jit_compile=True)`):
    TensorFlow Serving runs them only when started with `--xla_cpu_compilation_enabled=true`."""
    return [
        function.signature.name
        for meta_graph in _read_saved_model(export_dir).meta_graphs
        for function in meta_graph.graph_def.library.function
        if function.attr["_XlaMustCompile"].b
    ]


@functools.lru_cache(maxsize=1)
def serving_ops() -> frozenset[str]:
    """The ops available in `TF_SERVING_RELEASE` (see the module docstring); cached."""
    result = subprocess.run(
        [sys.executable, "-c", _REGISTRY_SCRIPT],
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"Could not read the TensorFlow op registry:\n{result.stderr[-2000:]}")
    registered = json.loads(result.stdout.strip().splitlines()[-1])
    return frozenset(registered) - PYTHON_ONLY_OPS


def unsupported_ops(ops: Iterable[str]) -> list[str]:
    """The ops of `ops` that `TF_SERVING_RELEASE` lacks, sorted."""
    available = serving_ops()
    return sorted(op for op in set(ops) if op not in available)


def check_serving_ops(export_dir: str | os.PathLike) -> set[str]:
    """Verifies that `TF_SERVING_RELEASE` can run the SavedModel in `export_dir`.

    Returns:
        The SavedModel's op types.

    Raises:
        UnsupportedOpError: naming each missing op and the release.
    """
    ops = saved_model_ops(export_dir)
    missing = unsupported_ops(ops)
    if missing:
        reasons = [
            f"{op} (runs Python code)" if op in PYTHON_ONLY_OPS else f"{op} (not registered)"
            for op in missing
        ]
        raise UnsupportedOpError(
            f"The SavedModel at {os.fspath(export_dir)!r} uses ops that {TF_SERVING_RELEASE} "
            f"does not have: {', '.join(reasons)}. The server links only core TensorFlow 2.21 "
            "and tensorflow-text 2.21 ops."
        )
    return ops
