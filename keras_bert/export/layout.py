"""The TensorFlow Serving directory layout: `<base>/<name>/<version>/`, written atomically.

TensorFlow Serving watches a model's base path (`<base>/<name>`) and loads every child directory
whose name is an integer, as version number. A version must therefore appear complete or not at
all: `write_version` writes into a hidden sibling directory (".tmp-..."; the server ignores names
that are not integers) and renames it into place, which is atomic on one file system. An
existing version is never overwritten.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

TEMPORARY_PREFIX = ".tmp-"


class VersionExistsError(FileExistsError):
    """The requested model version is already exported."""


def existing_versions(model_dir: str | os.PathLike) -> list[int]:
    """The integer versions under a model's base path, in increasing order."""
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        return []
    return sorted(
        int(child.name) for child in model_dir.iterdir() if child.is_dir() and child.name.isdigit()
    )


def next_version(model_dir: str | os.PathLike) -> int:
    """One more than the highest existing version, 1 for a new model."""
    versions = existing_versions(model_dir)
    return versions[-1] + 1 if versions else 1


def write_version(
    model_dir: str | os.PathLike,
    write: Callable[[Path], None],
    version: int | None = None,
) -> Path:
    """Writes one model version atomically and returns its directory.

    Args:
        model_dir: the model's base path, `<base>/<name>` (created if missing).
        write: called with an empty temporary directory to fill (SavedModel, assets.extra).
        version: the version number; the next free one if None.

    Raises:
        VersionExistsError: `version` already exists.
        Whatever `write` raises; the temporary directory is then removed.
    """
    model_dir = Path(model_dir)
    model_dir.mkdir(parents=True, exist_ok=True)
    if version is None:
        version = next_version(model_dir)
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise ValueError(f"A model version is a non-negative integer, got {version!r}.")
    target = model_dir / str(version)
    if target.exists():
        raise VersionExistsError(
            f"Version {version} of {str(model_dir)!r} already exists; versions are never "
            f"overwritten (next free version: {next_version(model_dir)})."
        )
    temporary = Path(tempfile.mkdtemp(prefix=f"{TEMPORARY_PREFIX}{version}-", dir=model_dir))
    try:
        write(temporary)
        os.chmod(temporary, 0o755)
        if target.exists():
            raise VersionExistsError(f"Version {version} of {str(model_dir)!r} appeared meanwhile.")
        # rename(2) onto an existing non-empty directory fails instead of replacing it.
        os.rename(temporary, target)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    return target
