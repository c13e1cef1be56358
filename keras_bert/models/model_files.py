"""A trained model saved with `model.save`, read back with one-line errors for the paths users
give instead of a `.keras` file (a run directory, a checkpoint). Importing this module imports
`keras_bert.models`, which registers every class a model file names."""

from __future__ import annotations

import os
from pathlib import Path

import keras

from keras_bert.errors import ConfigError


def load_model_file(path: str | os.PathLike, compile: bool = True) -> keras.Model:
    """The Keras model saved at `path` (a `.keras` file: a fine-tuning job's `model.keras`, a
    pretraining run's `pretrainer.keras`, any `model.save`), or a one-line error saying why not.

    Raises:
        ConfigError: a path that is not a `.keras` file (a run directory, a checkpoint).
        FileNotFoundError: no such file.

    Example:
    >>> load_model_file("runs/sentiment")
    Traceback (most recent call last):
    ...
    keras_bert.errors.ConfigError: runs/sentiment: not a .keras model file; give a model saved \
by a fine-tuning job (its output directory's model.keras) or by model.save('name.keras').
    """
    if Path(path).suffix != ".keras":
        raise ConfigError(
            f"{os.fspath(path)}: not a .keras model file; give a model saved by a fine-tuning "
            "job (its output directory's model.keras) or by model.save('name.keras')."
        )
    if not Path(path).is_file():
        raise FileNotFoundError(f"{os.fspath(path)}: no such model file.")
    return keras.saving.load_model(path, compile=compile)
