"""The errors keras_bert raises for faults of the user's input, each naming the bad value.

Pipelines print them as one line (`error: <fault>`) and exit with status 2.
"""


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
