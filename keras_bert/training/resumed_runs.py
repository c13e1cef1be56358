"""A run resumed in its output directory is the run that began there: the settings it started
with (its `config.json`) and the ones it is resumed with agree, except where and how it runs.

A backup restores the weights and optimizer state of one model, at a step of one schedule over
one stream of batches. Resumed under another model, learning rate, batch, step count or data,
it would fail to restore (Keras' "objects could not be loaded") or, worse, train on as a mix of
two runs whose `config.json` describes neither. So such a run stops before it writes anything.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from keras_bert.errors import ConfigError
from keras_bert.training.settings import RunSettings

# Settings a resumed run may change: where and how it runs (its output directory, the time
# budget whose plan the run kept, `RunSettings.NOT_TRAINING`), not what it trains.
PLACEMENT_SETTINGS = frozenset(
    {"output_dir", "time_budget_minutes", *(f"run.{name}" for name in RunSettings.NOT_TRAINING)}
)


class _Absent:
    """A setting absent from one of the two configs, as a change shows it."""

    def __repr__(self) -> str:
        return "(absent)"


_ABSENT = _Absent()


def _changes(before: Any, now: Any, name: str = "") -> list[str]:
    """`name: before → now` for each setting that differs, nested settings by dotted name
    (`run.learning_rate`). A top-level setting only one side names (a field that one version
    of keras_bert records and another does not) is not compared; a nested one is (a key added
    to `model_config`)."""
    if isinstance(before, Mapping) and isinstance(now, Mapping):
        keys = before.keys() & now.keys() if not name else before.keys() | now.keys()
        return [
            change
            for key in sorted(keys)
            for change in _changes(before.get(key, _ABSENT), now.get(key, _ABSENT), f"{name}{key}.")
        ]
    name = name.rstrip(".")
    if name in PLACEMENT_SETTINGS or before == now:
        return []
    return [f"{name}: {before!r} → {now!r}"]


def changed_settings(started: Mapping[str, Any], resumed: Mapping[str, Any]) -> list[str]:
    """The settings that `resumed` changes from `started`, outside `PLACEMENT_SETTINGS`, each
    as `name: before → now` (compared as `config.json` holds them). A top-level setting only
    one of them names (a run started by another version of keras_bert) is not compared.

    Example:
    >>> changed_settings(
    ...     {"model_preset": "tiny", "run": {"learning_rate": 0.002, "verbose": 2}},
    ...     {"model_preset": "mini", "run": {"learning_rate": 0.002, "verbose": 1}},
    ... )
    ["model_preset: 'tiny' → 'mini'"]
    >>> changed_settings({"run": {"seed": 0}}, {"run": {"seed": 0}, "train_examples": 16})
    []
    >>> changed_settings({"model_config": None}, {"model_config": {"hidden_size": 256}})
    ["model_config: None → {'hidden_size': 256}"]
    >>> changed_settings({"model_config": {}}, {"model_config": {"num_layers": 4}})
    ['model_config.num_layers: (absent) → 4']
    """
    return _changes(
        json.loads(json.dumps(started, default=str)), json.loads(json.dumps(resumed, default=str))
    )


def check_resumed_settings(
    config_file: Path, run_config: Mapping[str, Any], completed_epochs: int
) -> None:
    """Raises a `ConfigError` when the run recorded in `config_file`, backed up after
    `completed_epochs`, is resumed with other settings than it started with (`changed_settings`);
    a run without a recorded config resumes as it is.

    Example:
    >>> import tempfile
    >>> config_file = Path(tempfile.mkdtemp()) / "config.json"
    >>> _ = config_file.write_text('{"total_steps": 6, "run": {"seed": 0}}')
    >>> check_resumed_settings(config_file, {"total_steps": 6, "run": {"seed": 0}}, 2)
    >>> check_resumed_settings(config_file, {"total_steps": 12, "run": {"seed": 0}}, 2)
    Traceback (most recent call last):
    ...
    keras_bert.errors.ConfigError: ... holds a run backed up after epoch 2 that started with \
other settings (total_steps: 6 → 12): resume it with the settings in its config.json, or give \
the new run another output directory.
    """
    if not config_file.is_file():
        return
    changes = changed_settings(json.loads(config_file.read_text("utf-8")), run_config)
    if changes:
        raise ConfigError(
            f"{config_file.parent} holds a run backed up after epoch {completed_epochs} that "
            f"started with other settings ({'; '.join(changes)}): resume it with the settings "
            "in its config.json, or give the new run another output directory."
        )
