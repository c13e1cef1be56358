"""A pretraining process killed with SIGKILL resumes from its last checkpoint when restarted."""

import csv
import json
import signal
import subprocess
import time

import numpy as np
import pytest

from keras_bert import BertEncoder
from tests.training.conftest import (
    OBJECTIVES,
    ROOT,
    run_worker,
    worker_command,
    worker_environment,
)


@pytest.mark.slow
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_killed_run_resumes_and_finishes_at_the_planned_step(small_config, objective, tmp_path):
    run_dir = tmp_path / "run"
    metadata = run_dir / "backup" / "training_metadata.json"
    config = {**small_config, **OBJECTIVES[objective]}
    spec = {"config": config, "weights_out": str(tmp_path / "w.npz")}
    process = subprocess.Popen(
        worker_command(spec, tmp_path / "spec.json"),
        cwd=ROOT,
        env=worker_environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # Kill it (no chance to clean up) once it has backed up at least one epoch of 10 steps.
    deadline = time.monotonic() + 300
    while not (metadata.is_file() and json.loads(metadata.read_text())["epoch"] >= 1):
        assert process.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.wait()
    killed_at = json.loads(metadata.read_text())["epoch"]
    assert 1 <= killed_at < 4
    assert not (tmp_path / "w.npz").exists()

    run_worker(spec, tmp_path / "spec.json")
    with np.load(tmp_path / "w.npz") as result:
        # 40 steps in all: the restarted run trained only the epochs the first had not backed up.
        assert int(result["iterations"]) == 40
    assert json.loads(metadata.read_text())["epoch"] == 4
    with open(run_dir / "metrics.csv", encoding="utf-8") as file:
        epochs = [int(row["epoch"]) for row in csv.DictReader(file)]
    # The first process logged epochs 0 .. killed_at - 1 (perhaps one more before it died);
    # the second continued at killed_at.
    assert epochs[-(4 - killed_at) :] == list(range(killed_at, 4))
    # The final model is written as a checkpoint the encoder loads (ELECTRA's discriminator).
    encoder = BertEncoder.from_checkpoint(run_dir / "checkpoint")
    assert encoder.bert_config.hidden_size == 32
    assert encoder.bert_config.model_type == config["model_config"].get("model_type", "bert")
