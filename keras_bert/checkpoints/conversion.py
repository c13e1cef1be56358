"""A checkpoint rewritten as the directory every loader reads: `model.safetensors`,
`config.json` and the tokenizer files, for machines without the Hub or without torch's format.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np

from keras_bert.checkpoints.checkpoint import read_original_config
from keras_bert.checkpoints.hub import CONFIG_FILE, TOKENIZER_FILES, resolve_checkpoint
from keras_bert.checkpoints.huggingface import (
    WEIGHTS_FILE,
    canonical_name,
    read_weights_file,
    weights_files,
)
from keras_bert.checkpoints.layouts import is_read_by_models
from keras_bert.errors import CheckpointError


@dataclasses.dataclass
class Conversion:
    """What `convert_checkpoint` read, wrote and left out.

    Args:
        read: the files read from the source directory.
        written: the files written to the output directory.
        tensors: the number of tensors written.
        ignored: the tensors left out because no model reads them.
    """

    read: list[str]
    written: list[str]
    tensors: int
    ignored: list[str]


def convert_checkpoint(
    name_or_path: str | Path, output_dir: str | Path, revision: str | None = None
) -> Conversion:
    """Writes a Hugging Face checkpoint (directory or Hub id, safetensors or `pytorch_model.bin`,
    sharded or not) to `output_dir` as one `model.safetensors` with its config and tokenizer.

    Tensor names and dtypes stay as published (bfloat16 becomes float32); tensors no model reads
    are left out.

    Example:
    >>> import tempfile
    >>> conversion = convert_checkpoint(
    ...     "tests/checkpoints/fixtures/tinybert", tempfile.mkdtemp())
    >>> conversion.read, conversion.tensors, len(conversion.ignored)
    (['config.json', 'pytorch_model.bin', 'vocab.txt'], 46, 6)
    """
    source = resolve_checkpoint(name_or_path, revision)
    if not (source / CONFIG_FILE).is_file():
        raise CheckpointError(f"{source} has no {CONFIG_FILE}: not a Hugging Face checkpoint.")
    model_type = read_original_config(source / CONFIG_FILE).model_type
    shard_files = weights_files(source)
    tensors: dict[str, np.ndarray] = {}
    ignored: list[str] = []
    for shard_file in shard_files:
        for name, value in read_weights_file(source / shard_file).items():
            converted = canonical_name(name, model_type)
            if converted is not None and not is_read_by_models(converted[0]):
                ignored.append(name)
            else:
                tensors[name] = np.ascontiguousarray(value)
    from safetensors.numpy import save_file

    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    save_file(tensors, output_dir / WEIGHTS_FILE, metadata={"format": "pt"})
    copied = [name for name in (CONFIG_FILE, *TOKENIZER_FILES) if (source / name).is_file()]
    for name in copied:
        shutil.copyfile(source / name, output_dir / name)
    return Conversion(
        read=sorted([*copied, *shard_files]),
        written=sorted([*copied, WEIGHTS_FILE]),
        tensors=len(tensors),
        ignored=ignored,
    )
