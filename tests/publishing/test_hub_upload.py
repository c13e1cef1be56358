"""`push_to_hub` against the loopback Hub: a new repository in one commit that loads back by id
in a fresh process, revisions never replaced silently, and bad pushes stopped before any
request."""

import json
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_bert import BertClassifier, push_to_hub, save_checkpoint
from keras_bert.errors import PublishError
from keras_bert.publishing import hub_upload

CHECKPOINT = "../shared/reference/variants/distilbert"
TEXTS = ["A wonderful, moving film.", "Dull and far too long."]
# Run in a fresh process: the pushed model by Hub id, its predictions as JSON.
LOAD_BY_ID = """
import json, sys
from keras_bert import BertClassifier
model = BertClassifier.from_checkpoint(sys.argv[1], seq_length=32)
print(json.dumps({"labels": model.label_names, "logits": model.predict(sys.argv[2:]).tolist()}))
"""


@pytest.fixture
def saved(tmp_path):
    """A DistilBERT sentiment classifier carrying its preprocessor, and its saved directory."""
    keras.utils.set_random_seed(0)
    model = BertClassifier.from_checkpoint(
        CHECKPOINT, num_classes=2, label_names=["negative", "positive"], seq_length=32
    )
    return model, save_checkpoint(model, tmp_path / "sentiment")


@pytest.fixture
def token(hub_env, monkeypatch) -> str:
    monkeypatch.setenv("HF_TOKEN", "hf_loopback_token")
    return "hf_loopback_token"


@pytest.mark.slow
def test_a_push_is_one_commit_that_loads_back_by_id_in_a_fresh_process(saved, token, fake_hub):
    model, directory = saved

    push = push_to_hub(directory, "my-org/sentiment", private=True)

    (commit,) = [commit for commit in fake_hub.commits if commit.repo_id == "my-org/sentiment"]
    assert sorted(commit.added) == sorted(path.name for path in directory.iterdir())
    assert (commit.oid, push.revision, push.replaced) == (push.commit, "main", ())
    assert "my-org/sentiment" in fake_hub.private
    loaded = subprocess.run(
        [sys.executable, "-c", LOAD_BY_ID, "my-org/sentiment", *TEXTS],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    predictions = json.loads(loaded.stdout.strip().splitlines()[-1])
    assert predictions["labels"] == ["negative", "positive"]
    np.testing.assert_allclose(predictions["logits"], model.predict(TEXTS), rtol=0, atol=1e-6)


def test_a_revision_holding_a_model_is_replaced_only_when_asked(saved, token, fake_hub):
    _, directory = saved
    push_to_hub(directory, "my-org/replaced")
    fake_hub.repos["my-org/replaced"]["main"]["pytorch_model.bin"] = b"an older upload"
    commits = len(fake_hub.commits)

    with pytest.raises(PublishError, match=r"my-org/replaced@main already holds .*--replace"):
        push_to_hub(directory, "my-org/replaced")
    assert len(fake_hub.commits) == commits

    push = push_to_hub(directory, "my-org/replaced", replace=True)
    assert "pytorch_model.bin" in push.replaced
    assert fake_hub.commits[-1].deleted == ["pytorch_model.bin"]
    assert "pytorch_model.bin" not in fake_hub.repos["my-org/replaced"]["main"]


def test_a_new_revision_is_a_branch_and_main_stays(saved, token, fake_hub):
    _, directory = saved
    push_to_hub(directory, "my-org/branched")
    main = dict(fake_hub.repos["my-org/branched"]["main"])

    push = push_to_hub(directory, "my-org/branched", revision="v2")

    assert push.revision == "v2" and fake_hub.commits[-1].revision == "v2"
    assert fake_hub.repos["my-org/branched"]["main"] == main


def test_a_push_that_races_another_fails_instead_of_overwriting(
    saved, token, fake_hub, monkeypatch
):
    _, directory = saved
    push_to_hub(directory, "my-org/raced")
    looked = hub_upload._revision_files

    def another_push_lands(api, repo_id, revision):  # between our look and our commit
        found = looked(api, repo_id, revision)
        fake_hub.heads[(repo_id, revision)] = "0" * 40
        return found

    monkeypatch.setattr(hub_upload, "_revision_files", another_push_lands)
    commits = len(fake_hub.commits)

    with pytest.raises(PublishError, match="The Hub refused the push to my-org/raced@main"):
        push_to_hub(directory, "my-org/raced", replace=True)
    assert len(fake_hub.commits) == commits


@pytest.mark.parametrize(
    "repo_id, with_token, message",
    [
        ("my-org/sentiment/v1", True, "is not a Hub repository id"),
        ("my-org/sentiment--v1", True, "is not a Hub repository id"),
        ("my-org/sentiment", False, "No Hugging Face token to push to my-org/sentiment"),
    ],
    ids=["two slashes", "double dash", "no token"],
)
def test_a_bad_push_stops_before_any_request(
    saved, hub_env, monkeypatch, fake_hub, repo_id, with_token, message
):
    _, directory = saved
    if with_token:
        monkeypatch.setenv("HF_TOKEN", "hf_loopback_token")

    with pytest.raises(PublishError, match=message) as error:
        push_to_hub(directory, repo_id)
    assert "\n" not in str(error.value)
    assert fake_hub.requests == []
