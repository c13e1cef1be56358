"""Checkpoints by name: a Hugging Face Hub id (`roberta-base`, `org/name`) resolved to a cached
directory, downloading only the files keras_bert reads.

A local path always wins over a Hub id of the same spelling. Hub ids go through
`huggingface_hub` and its cache: `HF_HOME` / `HF_HUB_CACHE` (where), `HF_ENDPOINT` (from where),
`HF_HUB_OFFLINE=1` (cache only) and `HF_TOKEN` or `hf auth login` (private repos), each read at
every call. From a repo's files it downloads `config.json`, one weights format (safetensors,
sharded or not, else `pytorch_model.bin`, sharded or not) and the tokenizer files, never the
other formats a repo holds (`tf_model.h5`, `flax_model.msgpack`, `rust_model.ot`, `onnx/`, ...).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

from keras_bert.checkpoints.huggingface import WEIGHTS_FORMATS
from keras_bert.config import BertConfig
from keras_bert.errors import CheckpointError, ConfigError
from keras_bert.families import FAMILIES, Family

CONFIG_FILE = "config.json"
# The tokenizer files the preprocessors read: every family's (its record in
# `keras_bert.families`), and the special tokens' settings.
TOKENIZER_SETTINGS_FILE = "tokenizer_config.json"
TOKENIZER_FILES = (
    *dict.fromkeys(name for record in FAMILIES.values() for name in record.tokenizer.files),
    TOKENIZER_SETTINGS_FILE,
)
# `name` or `org/name`, as the Hub spells repo ids.
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


def is_local_checkpoint(path: str | os.PathLike) -> bool:
    """Whether `path` names something on disk: a directory, a file or a TF checkpoint prefix.

    Example:
    >>> is_local_checkpoint("../shared/reference/variants/roberta"), is_local_checkpoint("bert")
    (True, False)
    """
    return Path(path).exists() or Path(f"{os.fspath(path)}.index").is_file()


def is_hub_id(name: str | os.PathLike) -> bool:
    """Whether `name` is spelt as a Hub repo id (`name` or `org/name`) and names nothing on disk.

    Example:
    >>> is_hub_id("google-bert/bert-base-uncased"), is_hub_id("../shared/reference/variants")
    (True, False)
    """
    name = os.fspath(name)
    return bool(_HUB_ID.fullmatch(name)) and ".." not in name and not is_local_checkpoint(name)


def files_to_download(
    repo_files: Sequence[str], weights: bool = True, family: Family | None = None
) -> list[str]:
    """The files of a repo that keras_bert reads: config, one weights format, tokenizer.

    Args:
        repo_files: every file of the repo (paths relative to its root).
        weights: whether the weights are wanted (a preprocessor needs none).
        family: the family of its config, whose tokenizer files are wanted (None: any
            family's).

    Example:
    >>> files_to_download(["config.json", "pytorch_model.bin", "model.safetensors",
    ...                    "tf_model.h5", "onnx/model.onnx", "vocab.txt", "tokenizer.json"],
    ...                   family=FAMILIES["bert"])
    ['config.json', 'model.safetensors', 'vocab.txt']
    >>> files_to_download(["config.json", "pytorch_model.bin.index.json",
    ...                    "pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"])
    ['config.json', 'pytorch_model.bin.index.json', 'pytorch_model-00001-of-00002.bin', \
'pytorch_model-00002-of-00002.bin']
    """
    chosen = [name for name in (CONFIG_FILE,) if name in repo_files]
    for single_file, index_file in WEIGHTS_FORMATS if weights else ():
        if single_file in repo_files:
            chosen.append(single_file)
            break
        if index_file in repo_files:
            stem, _, suffix = single_file.partition(".")
            shard = re.compile(rf"{re.escape(stem)}-\d+-of-\d+\.{re.escape(suffix)}")
            chosen += [index_file, *sorted(name for name in repo_files if shard.fullmatch(name))]
            break
    tokenizer_files = TOKENIZER_FILES
    if family is not None:
        tokenizer_files = (*family.tokenizer.files, TOKENIZER_SETTINGS_FILE)
    return chosen + [name for name in tokenizer_files if name in repo_files]


def hub_settings() -> dict:
    """`huggingface_hub` arguments from the environment as it is now (the library reads some of
    it only once, when imported)."""
    cache_dir = os.environ.get("HF_HUB_CACHE")
    if cache_dir is None and "HF_HOME" in os.environ:
        cache_dir = os.path.join(os.environ["HF_HOME"], "hub")
    return {"endpoint": os.environ.get("HF_ENDPOINT"), "cache_dir": cache_dir}


def _is_offline() -> bool:
    from huggingface_hub import constants

    offline = os.environ.get("HF_HUB_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE")
    return offline or constants.is_offline_mode()


def _checked_family(config_file: Path, name: str) -> Family:
    """The family of a downloaded `config.json`, whose config keras_bert reads."""
    try:
        config = BertConfig.from_original_dict(json.loads(config_file.read_text("utf-8")))
    except (ConfigError, json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CheckpointError(f"{name}: {error}") from None
    return FAMILIES[config.model_type]


def _cached_snapshot(name: str, revision: str | None, cache_dir: str | None) -> Path:
    """The snapshot an earlier call downloaded, without asking the Hub."""
    from huggingface_hub import snapshot_download

    return Path(
        snapshot_download(
            name, revision=revision, allow_patterns=[CONFIG_FILE], local_files_only=True,
            cache_dir=cache_dir,
        )
    )  # fmt: skip


def _download(name: str, revision: str | None, weights: bool) -> Path:
    import httpx2
    from huggingface_hub import HfApi, constants, snapshot_download

    settings = hub_settings()
    if _is_offline():
        return _cached_snapshot(name, revision, settings["cache_dir"])
    try:  # one request: `list_repo_files` retries an unreachable Hub for 15 s (`http_backoff`)
        info = HfApi(endpoint=settings["endpoint"]).model_info(
            name, revision=revision or constants.DEFAULT_REVISION
        )
    except httpx2.TransportError:  # the Hub cannot be reached: what the cache holds
        return _cached_snapshot(name, revision, settings["cache_dir"])
    repo_files = [sibling.rfilename for sibling in info.siblings or ()]
    chosen = files_to_download(repo_files, weights)
    if CONFIG_FILE not in chosen:
        raise CheckpointError(
            f"The Hub repo {name} has no {CONFIG_FILE}: not a model keras_bert reads."
        )
    if weights and not set(chosen) - {CONFIG_FILE, *TOKENIZER_FILES}:
        formats = ", ".join(names[0] for names in WEIGHTS_FORMATS)
        raise CheckpointError(
            f"The Hub repo {name} has no weights keras_bert reads ({formats}, sharded or not); "
            f"it holds {', '.join(sorted(repo_files)[:20])}."
        )
    # The config first: an unsupported model_type fails before any weights are downloaded.
    config_directory = snapshot_download(
        name, revision=revision, allow_patterns=[CONFIG_FILE], **settings
    )
    family = _checked_family(Path(config_directory) / CONFIG_FILE, name)
    chosen = files_to_download(repo_files, weights, family)
    return Path(snapshot_download(name, revision=revision, allow_patterns=chosen, **settings))


def resolve_checkpoint(
    name_or_path: str | os.PathLike, revision: str | None = None, weights: bool = True
) -> Path:
    """The local path of a checkpoint: `name_or_path` itself if it is on disk, else the cached
    snapshot of the Hub repo it names (downloaded if needed, with a progress bar).

    Args:
        name_or_path: a directory, a file, a TF checkpoint prefix, or a Hub id (`org/name` or
            `name`).
        revision: the Hub branch, tag or commit (default: `main`); an error for a local path.
        weights: whether to download the weights too (not for a preprocessor).

    Raises:
        CheckpointError: no such repo or revision, no weights in it, offline and not cached, or
            a `model_type` keras_bert does not support.

    Example:
    >>> resolve_checkpoint("../shared/reference/variants/albert").name
    'albert'
    """
    if is_local_checkpoint(name_or_path):
        if revision is not None:
            raise CheckpointError(
                f"revision={revision!r} names a Hub revision, but {name_or_path} is a local path."
            )
        return Path(name_or_path)
    name = os.fspath(name_or_path)
    if not is_hub_id(name):
        raise FileNotFoundError(
            f"No checkpoint at {name}: it is neither a directory, a file nor a Hub id."
        )
    from huggingface_hub import errors

    try:
        return _download(name, revision, weights)
    except errors.RevisionNotFoundError:
        raise CheckpointError(f"The Hub repo {name} has no revision {revision!r}.") from None
    except (errors.RepositoryNotFoundError, errors.GatedRepoError):
        raise CheckpointError(
            f"No Hub repo {name} (and no local directory of that name); check the spelling, or "
            "log in (`hf auth login` or HF_TOKEN) if it is private or gated."
        ) from None
    except errors.LocalEntryNotFoundError:
        raise CheckpointError(
            f"{name} is not in the Hugging Face cache and the Hub cannot be reached (offline "
            "or HF_HUB_OFFLINE=1); download it once online, or convert it on a connected machine "
            "with `python -m pipelines.convert`."
        ) from None
