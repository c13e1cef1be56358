"""`pipelines.glue` end to end on slices of GLUE's real files (tiny checkpoint): every task
with its metrics, GLUE's server files, results.json, and a stopped job resumed; every file
read before the first task trains."""

import json
import shutil

import pytest

from keras_bert.errors import ConfigError, DataError
from pipelines import glue


@pytest.fixture(scope="module")
def small_glue(tmp_path_factory, data_dir):
    """The first rows of each task's train and dev file, bytes as they are (BOM, no header),
    and an MRPC test file without labels."""
    directory = tmp_path_factory.mktemp("glue")
    for task in ("CoLA", "MRPC", "STS-B", "RTE"):
        (directory / task).mkdir()
        for name, rows in (("train.tsv", 25), ("dev.tsv", 17)):
            lines = (data_dir / "benchmarks" / "glue" / task / name).read_bytes().split(b"\n")
            (directory / task / name).write_bytes(b"\n".join(lines[:rows]) + b"\n")
    dev = (directory / "MRPC" / "dev.tsv").read_text("utf-8-sig").splitlines()[1:]
    test = ["index\t#1 ID\t#2 ID\t#1 String\t#2 String"]
    test += [f"{index}\t" + "\t".join(row.split("\t")[1:]) for index, row in enumerate(dev)]
    (directory / "MRPC" / "test.tsv").write_text("\n".join(test) + "\n", "utf-8")
    return directory


@pytest.mark.slow
def test_glue_job_scores_every_task_and_resumes(small_glue, tiny_checkpoint_dir, tmp_path, capsys):
    flags = [
        "--data-dir", str(small_glue), "--tasks", "all", "--output-dir", str(tmp_path),
        "--checkpoint", str(tiny_checkpoint_dir), "--epochs", "1", "--batch-size", "8",
        "--seq-length", "32",
    ]  # fmt: skip
    report = glue.main(flags)
    assert list(report["tasks"]) == ["cola", "mrpc", "stsb", "rte"]
    assert {name: list(scores) for name, scores in report["tasks"].items()} == {
        "cola": ["mcc"],
        "mrpc": ["f1", "accuracy"],
        "stsb": ["pearson", "spearman"],
        "rte": ["accuracy"],
    }
    assert json.loads((tmp_path / "results.json").read_text()) == report
    output = capsys.readouterr().out
    assert "[2/4] mrpc: 24 examples, 1 epochs" in output and "| GLUE average |" in output
    submission = (tmp_path / "submission" / "MRPC.tsv").read_text().splitlines()
    assert submission[0] == "index\tprediction" and len(submission) == 17
    assert {line.split("\t")[1] for line in submission[1:]} <= {"0", "1"}
    # Run again: every task is read back, not trained again, also when a setting that does
    # not change what is trained differs.
    assert glue.main(flags) == report
    assert glue.main([*flags, "--backup-interval-seconds", "5"]) == report
    assert "examples, 1 epochs" not in capsys.readouterr().out
    with pytest.raises(ConfigError, match=r"other settings \(run.learning_rate: .* → 0.001\)"):
        glue.main([*flags, "--learning-rate", "1e-3"])


def test_every_file_is_read_before_the_first_task_trains(small_glue, tmp_path, capsys):
    """RTE, the last task, has no dev.tsv, then an empty one: the job stops at once, before
    CoLA trains (its checkpoint does not exist: training would fail with another error)."""
    data_dir = tmp_path / "glue"
    shutil.copytree(small_glue, data_dir)
    (data_dir / "RTE" / "dev.tsv").unlink()
    flags = ["--data-dir", str(data_dir), "--output-dir", str(tmp_path / "runs")]
    flags += ["--checkpoint", str(tmp_path / "no_checkpoint")]
    with pytest.raises(FileNotFoundError, match=r"RTE/dev.tsv: no such file \(rte's validation"):
        glue.main(flags)
    (data_dir / "RTE" / "dev.tsv").write_text("")
    with pytest.raises(DataError, match=r"RTE/dev.tsv: the file is empty"):
        glue.main(flags)
    assert capsys.readouterr().out == "" and not (tmp_path / "runs").exists()
