"""TensorFlow Serving configuration next to the exports: `models.config`, batching, commands.

`models.config` is a `ModelServerConfig` text proto listing every model under the base
directory; `batching_parameters.txt` is a `BatchingParameters` text proto for
`--enable_batching`. Paths in `models.config` are those the server sees: `/models/<name>` in
the `tensorflow/serving` Docker image, with the base directory mounted at `/models`.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

from google.protobuf import text_format
from tensorflow_serving.config import model_server_config_pb2

from keras_bert.cpu import ONEDNN_SWITCH
from keras_bert.export.layout import existing_versions
from keras_bert.export.op_check import xla_compiled_functions

TF_SERVING_IMAGE = "tensorflow/serving:2.21.0"
MODEL_CONFIG_FILE = "models.config"
BATCHING_PARAMETERS_FILE = "batching_parameters.txt"
CONTAINER_BASE_PATH = "/models"
GRPC_PORT = 8500
REST_PORT = 8501
# The server's environment (docs/serving.md; BENCHMARKS.md, section Serving): oneDNN's kernels
# on every CPU (TensorFlow turns them on by itself only with AVX-512 VNNI, BF16 or AMX; on the
# AVX2 EPYC they took 17% off a request), and each weight reordered into oneDNN's layout once
# and kept, instead of on every request: a server's weights never change.
SERVER_ENVIRONMENT = ((ONEDNN_SWITCH, "1"), ("TF_ONEDNN_ASSUME_FROZEN_WEIGHTS", "1"))


def model_names(base_dir: str | os.PathLike) -> list[str]:
    """The models under `base_dir`: directories with at least one integer version."""
    base_dir = Path(base_dir)
    if not base_dir.is_dir():
        return []
    return sorted(
        child.name
        for child in base_dir.iterdir()
        if child.is_dir() and not child.name.startswith(".") and existing_versions(child)
    )


def model_server_config(
    names: list[str], serving_base_path: str = CONTAINER_BASE_PATH
) -> model_server_config_pb2.ModelServerConfig:
    """A `ModelServerConfig` serving the latest version of each named model."""
    config = model_server_config_pb2.ModelServerConfig()
    for name in names:
        model = config.model_config_list.config.add()
        model.name = name
        model.base_path = posixpath.join(serving_base_path, name)
        model.model_platform = "tensorflow"
    return config


def batching_parameters(
    max_batch_size: int = 32,
    batch_timeout_micros: int = 2000,
    num_batch_threads: int | None = None,
    max_enqueued_batches: int = 100,
) -> str:
    """A `BatchingParameters` text proto.

    `pad_variable_length_inputs` lets requests of different sequence lengths on `serving_ids`
    share a batch (without it, TF Serving fails such a batch); it pads with each tensor's first
    element, which the signature masks (`signatures.mask_batching_padding`). String inputs are
    `[batch]` and batch as they are.
    """
    num_batch_threads = num_batch_threads or os.cpu_count() or 1
    return (
        f"max_batch_size {{ value: {max_batch_size} }}\n"
        f"batch_timeout_micros {{ value: {batch_timeout_micros} }}\n"
        f"max_enqueued_batches {{ value: {max_enqueued_batches} }}\n"
        f"num_batch_threads {{ value: {num_batch_threads} }}\n"
        "pad_variable_length_inputs: true\n"
    )


def write_server_config(
    base_dir: str | os.PathLike,
    serving_base_path: str = CONTAINER_BASE_PATH,
    max_batch_size: int = 32,
    batch_timeout_micros: int = 2000,
) -> tuple[Path, Path]:
    """Writes `models.config` (every model under `base_dir`) and `batching_parameters.txt`.

    Args:
        base_dir: the directory holding `<name>/<version>/` exports.
        serving_base_path: where the server sees `base_dir` (the Docker mount point, or the
            absolute path of `base_dir` for a local `tensorflow_model_server`).
        max_batch_size: the largest batch the server forms.
        batch_timeout_micros: how long the server waits to fill a batch.

    Returns:
        The paths of the two files.
    """
    base_dir = Path(base_dir)
    base_dir.mkdir(parents=True, exist_ok=True)
    config = model_server_config(model_names(base_dir), serving_base_path)
    config_path = base_dir / MODEL_CONFIG_FILE
    config_path.write_text(text_format.MessageToString(config), encoding="utf-8")
    batching_path = base_dir / BATCHING_PARAMETERS_FILE
    batching_path.write_text(
        batching_parameters(max_batch_size, batch_timeout_micros), encoding="utf-8"
    )
    return config_path, batching_path


def server_flags(base_dir: str | os.PathLike, config_dir: str | os.PathLike) -> str:
    """The model server's flags for the models of `base_dir`, its files read from `config_dir`
    (where the server sees `base_dir`): XLA on if a model's served version (its latest) holds
    XLA-compiled functions, which the server otherwise refuses to load."""
    served = [
        Path(base_dir) / name / str(existing_versions(Path(base_dir) / name)[-1])
        for name in model_names(base_dir)
    ]
    xla = any(
        xla_compiled_functions(version)
        for version in served
        if (version / "saved_model.pb").is_file()
    )
    return (
        f"--model_config_file={config_dir}/{MODEL_CONFIG_FILE} "
        "--model_config_file_poll_wait_seconds=60 "
        "--enable_batching=true "
        f"--batching_parameters_file={config_dir}/{BATCHING_PARAMETERS_FILE}"
        + (" --xla_cpu_compilation_enabled=true" if xla else "")
    )


def docker_command(base_dir: str | os.PathLike) -> str:
    """The `docker run` command that serves every model of `base_dir` (REST 8501, gRPC 8500),
    in the server's environment (`SERVER_ENVIRONMENT`)."""
    mount = Path(base_dir).resolve()
    environment = " ".join(f"-e {name}={value}" for name, value in SERVER_ENVIRONMENT)
    return (
        f"docker run --rm -p {GRPC_PORT}:{GRPC_PORT} -p {REST_PORT}:{REST_PORT} "
        f'-v "{mount}:{CONTAINER_BASE_PATH}" {environment} {TF_SERVING_IMAGE} '
        + server_flags(base_dir, CONTAINER_BASE_PATH)
    )


def model_server_command(base_dir: str | os.PathLike) -> str:
    """The `tensorflow_model_server` command for a `models.config` written with the absolute
    `base_dir` as `serving_base_path`, in the server's environment (`SERVER_ENVIRONMENT`)."""
    base_dir = Path(base_dir).resolve()
    environment = " ".join(f"{name}={value}" for name, value in SERVER_ENVIRONMENT)
    return (
        f"{environment} tensorflow_model_server "
        f"--port={GRPC_PORT} --rest_api_port={REST_PORT} " + server_flags(base_dir, base_dir)
    )
