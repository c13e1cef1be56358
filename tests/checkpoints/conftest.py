"""Fixtures of the checkpoint tests: a loopback Hugging Face Hub serving the seeds' published
checkpoints, and an environment that points `huggingface_hub` at it with an empty cache."""

from pathlib import Path

import pytest

from tests.checkpoints.hub_server import FakeHub, LoopbackHub
from tests.checkpoints.published import published_repos

# Run by hand with torch (the `peer` extra) to write the fixtures; the tests never import it.
collect_ignore = ["fixtures/write_torch_fixtures.py"]


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


def use_hub(monkeypatch, url: str, home: Path) -> None:
    """Points `huggingface_hub` at `url` with its cache under `home`, online, no token."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_ENDPOINT", url)
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    for name in ("HF_HUB_CACHE", "HF_HUB_OFFLINE", "HF_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


@pytest.fixture
def hub_env(monkeypatch, tmp_path, loopback_hub) -> Path:
    """The loopback Hub as `HF_ENDPOINT` and an empty cache; returns `HF_HOME`."""
    home = tmp_path / "hf_home"
    use_hub(monkeypatch, loopback_hub.url, home)
    loopback_hub.hub.requests.clear()
    return home
