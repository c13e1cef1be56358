"""Pretraining under MirroredStrategy (two logical CPUs) and MultiWorkerMirroredStrategy (two
local worker processes); each run is a subprocess, since devices are fixed at TF start-up."""

import json
import socket
import subprocess

import numpy as np
import pytest

from keras_bert.training.precision import PrecisionChoice
from tests.training.conftest import (
    OBJECTIVES,
    ROOT,
    run_worker,
    worker_command,
    worker_environment,
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _weights(path):
    with np.load(path) as archive:
        return {name: archive[name] for name in archive.files}


@pytest.mark.slow
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_mirrored_strategy_on_two_logical_cpus_with_xla_fallback(small_config, objective, tmp_path):
    run = {**small_config["run"], "strategy": "mirrored", "jit_compile": True}
    config = {**small_config, **OBJECTIVES[objective], "run": run, "total_steps": 20}
    spec = {"config": config, "logical_cpus": 2, "weights_out": str(tmp_path / "w.npz")}
    run_worker(spec, tmp_path / "spec.json")
    result = _weights(tmp_path / "w.npz")
    assert int(result["replicas"]) == 2
    assert int(result["iterations"]) == 20
    # XLA under a mirrored strategy on CPU fails in Keras 3.15: the trainer falls back.
    assert not bool(result["jit_compile"])


@pytest.mark.slow
@pytest.mark.parametrize(
    "objective, precision, time_budget_minutes",
    [("masked_lm", "auto", 60), ("replaced_token_detection", "float32", None)],
)
def test_multi_worker_mirrored_two_processes_end_with_identical_weights(
    small_config, objective, precision, time_budget_minutes, tmp_path
):
    ports = [_free_port(), _free_port()]
    cluster = {"worker": [f"127.0.0.1:{port}" for port in ports]}
    # "auto": on a CPU with bfloat16 units each worker times the steps (on others, float32).
    # A time budget that holds all 20 steps: the workers plan from their timings' mean. Once
    # each is enough: the objective does not change how the workers agree on them.
    run = {**small_config["run"], "strategy": "multi_worker_mirrored", "precision": precision}
    config = {
        **small_config,
        **OBJECTIVES[objective],
        "run": run,
        "total_steps": 20,
        "time_budget_minutes": time_budget_minutes,
    }
    # A start stopped after the chief recorded its choice and before the other worker did: the
    # chief must not keep its record alone (its policy could differ, and the other worker's
    # timing waits for the chief in an all-reduce).
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    stopped_start = PrecisionChoice("mixed_float16", "auto", "a stopped start", 1.0, 2.0)
    (run_dir / "precision.json").write_text(json.dumps(stopped_start.to_dict()))
    processes = []
    for index in range(2):
        spec = {
            "config": config,
            "tf_config": {"cluster": cluster, "task": {"type": "worker", "index": index}},
            "weights_out": str(tmp_path / f"worker_{index}.npz"),
            "values": [index, 10 - index],
        }
        processes.append(
            subprocess.Popen(
                worker_command(spec, tmp_path / f"spec_{index}.json"),
                cwd=ROOT,
                env=worker_environment(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for process in processes:
        _, stderr = process.communicate(timeout=400)
        assert process.returncode == 0, stderr[-3000:]
    chief, other = _weights(tmp_path / "worker_0.npz"), _weights(tmp_path / "worker_1.npz")
    assert int(chief["replicas"]) == 2 and int(chief["iterations"]) == 20
    # Both workers get the mean of [0, 10] and [1, 9]: what "auto" precision chooses from.
    assert chief["means"].tolist() == [0.5, 9.5]
    assert chief.keys() == other.keys()
    for name in chief:
        np.testing.assert_array_equal(chief[name], other[name], err_msg=name)
    # Only the chief writes the run's outputs; the other worker keeps its backup apart.
    assert (run_dir / "pretrainer.keras").is_file() and (run_dir / "checkpoint").is_dir()
    assert (run_dir / "workers" / "worker_1" / "backup").is_dir()
    # Each worker records its precision apart (as it resumes from its own backup), and both
    # chose anew, from the same mean timings.
    chosen = (run_dir / "precision.json").read_text()
    assert chosen == (run_dir / "workers" / "worker_1" / "precision.json").read_text()
    assert json.loads(chosen)["policy"] in ("float32", "mixed_bfloat16")
    assert json.loads(chosen)["requested"] == precision
    plan = run_dir / "time_budget.json"
    if time_budget_minutes is None:
        assert not plan.exists()
    else:
        other_plan = run_dir / "workers" / "worker_1" / "time_budget.json"
        assert plan.read_text() == other_plan.read_text()
        assert json.loads(plan.read_text())["total_steps"] == 20
