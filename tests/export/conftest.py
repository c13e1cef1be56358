"""Fixtures of the export tests: tiny task models, their serving modules and exports."""

from pathlib import Path

import pytest

from tests.export import builders


@pytest.fixture(scope="session")
def serving_modules(minilm_dir: Path) -> dict:
    return builders.serving_modules(str(minilm_dir / "vocab.txt"))


@pytest.fixture(scope="session")
def exported_base(minilm_dir: Path) -> Path:
    return builders.exported_base(str(minilm_dir / "vocab.txt"))
