"""docs/checkpoints_by_name.md runs as written against the loopback Hub: its snippets, and every
row of its table (each Hub name loads as the row says, encoder and preprocessor)."""

import re
import shlex
from pathlib import Path

import pytest

from keras_bert import load_encoder, load_preprocessor
from keras_bert.checkpoints.hub import resolve_checkpoint
from pipelines import convert
from tests.checkpoints.published import published_repos

PAGE = Path(__file__).resolve().parents[2] / "docs" / "checkpoints_by_name.md"
_TEXT = PAGE.read_text("utf-8")
# `| System | Hub names | Weights published | What loading needs |` rows, header excluded.
ROWS = [
    [cell.strip() for cell in line.strip("|").split("|")]
    for line in _TEXT.splitlines()
    if line.startswith("| ") and not line.startswith("| System")
]


def _files(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in directory.iterdir()}


def _hub_names(row: list[str]) -> list[str]:
    return re.findall(r"`([^`]+)`", row[1])


def test_the_table_lists_every_published_checkpoint():
    listed = {name for row in ROWS for name in _hub_names(row)}

    assert listed == set(published_repos())
    assert len(ROWS) == 22


@pytest.mark.parametrize("row", ROWS, ids=[row[0] for row in ROWS])
def test_every_row_loads_as_the_table_says(hub_env, row):
    needs = dict(re.findall(r'(\w+)="([^"]+)"', row[3]))
    name, *aliases = _hub_names(row)

    encoder = load_encoder(name)
    preprocessor = load_preprocessor(name, seq_length=16, **needs)
    outputs = encoder(preprocessor(["The cat sat on the mat.", "Proteins fold."]))
    assert outputs["sequence_output"].shape == (2, 16, encoder.bert_config.hidden_size)
    for alias in aliases:  # the short ids: the same files
        assert _files(resolve_checkpoint(alias)) == _files(resolve_checkpoint(name))


def test_without_its_vocabulary_the_error_says_how_to_supply_it(hub_env):
    with pytest.raises(ValueError, match=r"vocabulary_from=") as error:
        load_preprocessor("SpanBERT/spanbert-base-cased")

    assert "\n" not in str(error.value)


def test_the_page_runs_as_written(hub_env, fake_hub, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```(python|bash)\n(.*?)```", _TEXT, re.S)
    assert [language for language, _ in blocks].count("bash") == 1
    namespace: dict = {}
    for language, block in blocks:
        if language == "bash":
            arguments = shlex.split(block)
            assert arguments[:3] == ["python", "-m", "pipelines.convert"]
            convert.main(arguments[3:])
        else:
            requests_before = len(fake_hub.requests)
            exec(compile(block, str(PAGE), "exec"), namespace)
    assert namespace["outputs"]["sequence_output"].shape[:2] == (1, 32)
    assert (tmp_path / "deberta-v3-base" / "model.safetensors").is_file()
    assert len(fake_hub.requests) == requests_before  # the offline block asked the Hub nothing
