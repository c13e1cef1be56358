"""Old public names that keep working, with a warning, after a rename or a move: keywords,
config fields, and names that moved to another module."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
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


def nest_keywords(
    values: Mapping[str, Any], names: Sequence[str], into: str, owner: str
) -> dict[str, Any]:
    """`values` with the deprecated top-level keys `names` moved into `values[into]` (a
    dataclass or a dict of its fields; a DeprecationWarning each).

    Args:
        values: keyword arguments or config fields as given.
        names: the fields that moved into `into`.
        into: the field that holds them now.
        owner: what takes the keywords, named in the warning.

    Example:
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     nest_keywords({"seed": 1, "run": {"precision": "auto"}}, ["seed"], "run", "f")
    {'run': {'precision': 'auto', 'seed': 1}}
    >>> str(caught[0].message)
    'f: `seed` is deprecated; use `run.seed`.'
    """
    nested = dict(values)
    moved = {name: nested.pop(name) for name in names if name in nested}
    if not moved:
        return nested
    for name in moved:
        warn_deprecated(f"{owner}: `{name}`", f"`{into}.{name}`", stacklevel=4)
    given = nested.get(into, {})
    if dataclasses.is_dataclass(given):
        nested[into] = dataclasses.replace(given, **moved)
        return nested
    both = sorted(set(moved) & set(given))
    if both:
        raise TypeError(f"{owner} got both `{both[0]}` (deprecated) and `{into}.{both[0]}`.")
    nested[into] = {**given, **moved}
    return nested


def nested_fields(names: Sequence[str], into: str) -> Callable[[type], type]:
    """Decorates a dataclass whose fields `names` moved into its field `into` (a dataclass,
    or a dict of its fields): the constructor still takes them at the top level (e.g. from an
    older JSON config) and moves them in (`nest_keywords`); read-only properties read them
    from there (each warns).

    Example:
    >>> import dataclasses, warnings
    >>> @dataclasses.dataclass(frozen=True)
    ... class Schedule:
    ...     learning_rate: float = 0.1
    >>> @nested_fields(["learning_rate"], into="schedule")
    ... @dataclasses.dataclass
    ... class Job:
    ...     schedule: Schedule = Schedule()
    ...     def __post_init__(self):
    ...         if isinstance(self.schedule, dict):
    ...             self.schedule = Schedule(**self.schedule)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     Job(learning_rate=0.5).learning_rate
    0.5
    >>> [str(warning.message) for warning in caught]  # doctest: +NORMALIZE_WHITESPACE
    ['Job: `learning_rate` is deprecated; use `schedule.learning_rate`.',
     'Job.learning_rate is deprecated; use .schedule.learning_rate.']
    """

    def decorate(cls: type) -> type:
        init = cls.__init__

        @functools.wraps(init)
        def wrapper(self, *args, **kwargs):
            init(self, *args, **nest_keywords(kwargs, names, into, cls.__name__))

        wrapper.__signature__ = inspect.signature(init)
        cls.__init__ = wrapper
        for name in names:

            def read(self, name: str = name) -> Any:
                warn_deprecated(f"{type(self).__name__}.{name}", f".{into}.{name}")
                return getattr(getattr(self, into), name)

            setattr(cls, name, property(read, doc=f"Deprecated alias of `{into}.{name}`."))
        return cls

    return decorate


def moved_names(new_modules: Mapping[str, str], old_module: str) -> Callable[[str], Any]:
    """The `__getattr__` of a module whose names moved: name → the module that holds it now.
    They still import from `old_module`, each with a DeprecationWarning.

    Example:
    >>> import warnings
    >>> module_getattr = moved_names({"dumps": "json"}, "old_json")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     module_getattr("dumps")([1])
    '[1]'
    >>> str(caught[0].message)
    'old_json.dumps is deprecated; use json.dumps.'
    """

    def module_getattr(name: str) -> Any:
        if name not in new_modules:
            raise AttributeError(f"module {old_module!r} has no attribute {name!r}")
        warn_deprecated(f"{old_module}.{name}", f"{new_modules[name]}.{name}")
        return getattr(importlib.import_module(new_modules[name]), name)

    return module_getattr
