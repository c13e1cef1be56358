"""The errors keras_bert raises for faults of the user's input, each naming the bad value.

Pipelines print them as one line (`error: <fault>`) and exit with status 2.
"""

from typing import Any

import numpy as np


class KerasBertError(ValueError):
    """Base of the errors below: a fault in what the user gave, not a bug."""


class ConfigError(KerasBertError):
    """A configuration that cannot describe a model or a run."""


class CheckpointError(KerasBertError):
    """A checkpoint that cannot be read, or does not fit the model it is loaded into."""


class DataError(KerasBertError):
    """Input data that cannot be used as asked, with where and why."""


class PublishError(KerasBertError):
    """A model that cannot be published where asked: a directory holding another model, a Hub
    repository id, revision or credentials that do not allow the push."""


def check_positive(**settings: float | None) -> None:
    """Raises a `ConfigError` naming the first of `settings` that is not positive; None is a
    setting left unset.

    Example:
    >>> check_positive(epochs=2, batch_size=0)
    Traceback (most recent call last):
    ...
    keras_bert.errors.ConfigError: batch_size must be positive, got 0.
    """
    for name, value in settings.items():
        if value is not None and not value > 0:
            raise ConfigError(f"{name} must be positive, got {value!r}.")


def check_not_negative(**settings: float) -> None:
    """Raises a `ConfigError` naming the first of `settings` that is negative (0 is allowed:
    a rate of nothing, a count of none).

    Example:
    >>> check_not_negative(weight_decay=0.0, eval_steps=-1)
    Traceback (most recent call last):
    ...
    keras_bert.errors.ConfigError: eval_steps must not be negative, got -1.
    """
    for name, value in settings.items():
        if value < 0:
            raise ConfigError(f"{name} must not be negative, got {value!r}.")


def check_ids(ids: Any, count: int, subject: str, table: str, advice: str = "") -> None:
    """Raises a `DataError` naming the first of `ids` outside `[0, count)`, the rows of
    `table` (class ids, tag ids, token and token type ids: each a row of a table).

    Example:
    >>> check_ids([[0, 1], [1, 5]], 2, "Class id", "this classifier's 2 classes")
    Traceback (most recent call last):
    ...
    keras_bert.errors.DataError: Class id 5 is not one of this classifier's 2 classes (0-1).
    """
    ids = np.asarray(ids)
    outside = ids[(ids < 0) | (ids >= count)]
    if outside.size:
        bad = outside.flat[0]
        bad = int(bad) if float(bad).is_integer() else float(bad)
        raise DataError(f"{subject} {bad} is not one of {table} (0-{count - 1}){advice}.")
