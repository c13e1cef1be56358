"""`pipelines.publish`: where to publish is required, and a push that cannot happen (a malformed
repository id, no token) ends in one line before the model is read or anything written."""

import pytest

from pipelines import publish
from pipelines.common import run_job


def _error(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_status:
        run_job(publish.main, argv)
    assert exit_status.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    return error


def test_the_job_needs_an_output_or_a_repository(capsys):
    error = _error(capsys, ["--model", "runs/sentiment/model.keras"])

    assert error.startswith("error: Give --output, --repo or both")


@pytest.mark.parametrize(
    "repo, token, message",
    [
        ("my-org/a/b", "hf_loopback_token", "'my-org/a/b' is not a Hub repository id"),
        ("my-org/sentiment", None, "No Hugging Face token to push to my-org/sentiment"),
    ],
    ids=["malformed id", "no token"],
)
def test_a_push_that_cannot_happen_stops_before_anything_is_written(
    hub_env, monkeypatch, fake_hub, tmp_path, capsys, repo, token, message
):
    if token:
        monkeypatch.setenv("HF_TOKEN", token)
    output = tmp_path / "huggingface"
    argv = ["--model", str(tmp_path / "model.keras"), "--output", str(output), "--repo", repo]

    assert _error(capsys, argv).startswith(f"error: {message}")
    assert not output.exists() and fake_hub.requests == []
