"""What a training run wrote beside its model, for the model card: the checkpoint it started
from (`checkpoint` in a fine-tuning run's `config.json`, `init_checkpoint` in a pretraining
run's) and what it measured (`metrics.json`)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

RUN_CONFIG = "config.json"
RUN_METRICS = "metrics.json"


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """A run's base checkpoint and metrics summary (None where it wrote none)."""

    base_model: str | None = None
    metrics: dict[str, Any] | None = None


def _json_object(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    values = json.loads(path.read_text("utf-8"))
    return values if isinstance(values, dict) else None


def read_run_record(model_file: str | os.PathLike) -> RunRecord:
    """The record of the run whose output directory holds `model_file` (`<run>/model.keras`).

    Example:
    >>> read_run_record("no/such/run/model.keras")
    RunRecord(base_model=None, metrics=None)
    """
    directory = Path(model_file).parent
    config = _json_object(directory / RUN_CONFIG) or {}
    base_model = config.get("checkpoint") or config.get("init_checkpoint")
    return RunRecord(base_model, _json_object(directory / RUN_METRICS))
