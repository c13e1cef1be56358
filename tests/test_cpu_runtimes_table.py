"""BENCHMARKS' serving table (`bench.bench_cpu_runtimes table`) from a results file's lines."""

from bench.bench_cpu_runtimes import runtime_table
from tests.test_figures import runtime_record


def _run(commit: str, ours_p50: float) -> list[dict]:
    records = [
        runtime_record("ours-onnx-float32", "ours", ours_p50, 500.0, 1.0),
        runtime_record("peer-ort-int8", "peer", 3.0, 400.0, 0.95),
    ]
    return [{**record, "commit": commit} for record in records]


def test_a_cpus_column_is_its_last_appended_run_whatever_its_commit_is_called():
    # Two runs on one day: the later commit's name sorts first.
    table = runtime_table(_run("f0f0f0f", 9.0) + _run("0a0a0a0", 6.0))
    assert "| ours: ONNX Runtime (OnnxModel), float32 | 6.00 ms, 500/s, 100.00% |" in table
    assert "9.00 ms" not in table
    assert "ours-onnx-float32: 2.00× peer-ort-int8" in table  # batch 1, against any peer
    assert "0a0a0a0" in table and "f0f0f0f" not in table
