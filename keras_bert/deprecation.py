"""Old public keyword names that keep working, with a warning, after a rename."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Mapping
from typing import Any

# The packed input length was also called `max_seq_length` (Google's flag name).
SEQ_LENGTH_RENAMES = {"max_seq_length": "seq_length"}


def warn_deprecated(old: str, new: str, stacklevel: int = 3) -> None:
    """Warns that `old` is deprecated in favour of `new` (at the caller's caller)."""
    warnings.warn(f"{old} is deprecated; use {new}.", DeprecationWarning, stacklevel=stacklevel)


def rename_keywords(values: Mapping[str, Any], renames: Mapping[str, str], owner: str) -> dict:
    """`values` with deprecated keys replaced by their new names (a DeprecationWarning each).

    Args:
        values: keyword arguments or config fields as given.
        renames: old name -> new name.
        owner: what takes the keywords, named in the warning.

    Example:
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     rename_keywords({"vocabulary_size": 100}, {"vocabulary_size": "vocab_size"}, "f")
    {'vocab_size': 100}
    >>> str(caught[0].message)
    'f: `vocabulary_size` is deprecated; use `vocab_size`.'
    """
    renamed = dict(values)
    for old, new in renames.items():
        if old not in renamed:
            continue
        warn_deprecated(f"{owner}: `{old}`", f"`{new}`", stacklevel=4)
        if new in renamed:
            raise TypeError(f"{owner} got both `{old}` (deprecated) and `{new}`.")
        renamed[new] = renamed.pop(old)
    return renamed


def accepts_deprecated_keywords(renames: Mapping[str, str]) -> Callable:
    """Decorates `__init__` (or any function) to accept the old keyword names in `renames`."""

    def decorate(function: Callable) -> Callable:
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            return function(*args, **rename_keywords(kwargs, renames, function.__qualname__))

        # Keras reads a layer's constructor arguments from its signature.
        wrapper.__signature__ = inspect.signature(function)
        return wrapper

    return decorate


def renamed_fields(renames: Mapping[str, str]) -> Callable[[type], type]:
    """Decorates a dataclass whose fields were renamed: the constructor takes the old names
    too, and read-only properties under the old names read the new fields (each warns)."""

    def decorate(cls: type) -> type:
        cls.__init__ = accepts_deprecated_keywords(renames)(cls.__init__)
        for old, new in renames.items():

            def read(self, old: str = old, new: str = new) -> Any:
                warn_deprecated(f"{type(self).__name__}.{old}", f".{new}")
                return getattr(self, new)

            setattr(cls, old, property(read, doc=f"Deprecated alias of `{new}`."))
        return cls

    return decorate
