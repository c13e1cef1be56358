"""The benchmarks' figures: one command draws them from the results files, and each plots the
values of its file."""

import json
import statistics

import pytest

from bench import figures
from bench.field_benchmarks import ANCHORS, job_recipe

CPU = "AMD EPYC, 2 cores; has: avx2, fma, avx512f, avx512_bf16"


def quality_record(seed: int, accuracy: float, precision: str = "float32") -> dict:
    return {
        "precision": {"policy": precision, "requested": precision},
        "task": "rte",
        "seed": seed,
        "recipe": job_recipe("rte"),
        "evaluation": {"rte": {"accuracy": accuracy}},
        "sequences_per_second": 60.0,
        "revision": "abc1234",
        "cpu": CPU,
        "load_average_15min": 1.9,
        "finished": f"2026-11-29T00:00:0{seed}",
    }


def speed_record(side: str, epoch_seconds: list[float], **settings) -> dict:
    precision = settings.pop("precision", "")
    return {
        **({"precision": {"policy": precision}} if precision else {}),
        "task": "mrpc",
        "side": side,
        "settings": {"max_train_examples": 1000, "epochs": 2, **settings},
        "train_sequences": 2000,
        "sequences_per_second": round(2000 / sum(epoch_seconds), 2),
        "epoch_seconds": epoch_seconds,
        "revision": "abc1234",
        "cpu": CPU,
    }


def runtime_record(runtime: str, side: str, p50: float, rate: float, agreement: float) -> dict:
    return {
        "date": "2026-12-01",
        "commit": "abc1234",
        "cpu": "Intel(R) Xeon(R) Processor, 2 cores; has: avx2, amx_bf16; lacks: none",
        "rounds": 5,
        "load_average_before": 1.0,
        "load_average_after": 2.0,
        "runtime": runtime,
        "side": side,
        "engine": "ONNX Runtime",
        "precision": "float32",
        "batch1_p50_ms": p50,
        "batch32_sentences_per_second": rate,
        "agreement": agreement,
    }


def long_input_record(side: str, length: int, seconds: float, memory_mb: float) -> dict:
    return {
        "model": "modernbert-base",
        "side": side,
        "length": length,
        "seconds": seconds,
        "forward_peak_mb": memory_mb,
        "revision": "abc1234",
        "cpu": CPU,
    }


def bars(figure) -> dict[str, list[tuple[float, float, float]]]:
    """Each bar series of a figure by its label: (width, whisker's low end, high end) per bar,
    read back from the drawn artists (the ends are the width where a series has no whiskers)."""
    (axes,) = figure.axes
    series = {}
    for container in axes.containers:
        if not hasattr(container, "patches"):
            continue
        widths = [patch.get_width() for patch in container.patches]
        ends = [(width, width) for width in widths]
        if container.errorbar is not None:
            segments = container.errorbar.lines[2][0].get_segments()
            ends = [(segment[0][0], segment[1][0]) for segment in segments]
        series[container.get_label()] = [
            (width, *end) for width, end in zip(widths, ends, strict=True)
        ]
    return series


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    quality = [quality_record(0, 0.56), quality_record(1, 0.58), quality_record(2, 0.63)]
    quality.append(quality_record(0, 0.59, "mixed_bfloat16"))
    speed = [
        speed_record("keras_bert", [30.0, 10.0], precision="float32"),  # 50 sequences/s
        speed_record("keras_bert", [20.0, 5.0], precision="mixed_bfloat16"),  # 80
        speed_record("hugging_face", [40.0, 40.0], glue_padding="max_length"),  # 25
        speed_record("hugging_face", [20.0, 20.0], glue_padding="longest"),  # 50
    ]
    runtimes = [
        runtime_record("ours-onnx-float32", "ours", 4.0, 500.0, 1.0),
        runtime_record("peer-ort-int8", "peer", 3.0, 300.0, 0.95),
    ]
    long_inputs = [
        long_input_record(side, length, seconds, memory)
        for side, length, seconds, memory in (
            ("keras_bert", 512, 0.5, 900.0),
            ("keras_bert", 2048, 2.0, 1000.0),
            ("transformers", 512, 1.0, 800.0),
            ("transformers", 2048, 6.0, 1200.0),
        )
    ]
    files = (
        ("field_benchmarks", quality),
        ("training_speed", speed),
        ("cpu_runtimes", runtimes),
        ("long_documents", long_inputs),
    )
    for name, records in files:
        lines = "".join(json.dumps(record) + "\n" for record in records)
        (results / f"{name}.jsonl").write_text(lines)
    out = tmp_path_factory.mktemp("figures")
    return figures.main(["--results-dir", str(results), "--out", str(out)]), out


def test_one_command_writes_every_figure_as_svg_with_its_text(drawn):
    figures_by_name, out = drawn
    assert set(figures_by_name) == set(figures.FIGURES)
    for name in figures.FIGURES:
        svg = (out / f"{name}.svg").read_text()
        assert svg.startswith("<?xml") and "<text" in svg and "<dc:date>" not in svg
    assert "MRPC" not in (out / "field_benchmarks.svg").read_text()  # only what the file holds


def test_the_field_benchmarks_bars_are_the_files_seed_means_and_ranges(drawn):
    series = bars(drawn[0]["field_benchmarks"])
    assert series["keras_bert float32"] == [pytest.approx((59.0, 56.0, 63.0))]
    assert series["keras_bert mixed_bfloat16"] == [pytest.approx((59.0, 59.0, 59.0))]
    peer = [100 * value for value in json.loads(ANCHORS.read_text())["glue_dev"]["rte"]["accuracy"]]
    assert series["Hugging Face (anchors)"] == [
        pytest.approx((statistics.mean(peer), min(peer), max(peer)))
    ]


def test_the_training_speed_bars_are_ours_over_the_peers_faster_padding(drawn):
    series = bars(drawn[0]["training_speed"])
    # 50 and 80 sequences/s against the peer's faster 50 (padded to each batch's longest).
    assert series == {
        "keras_bert float32": [pytest.approx((1.0, 1.0, 1.0))],
        "keras_bert mixed_bfloat16": [pytest.approx((1.6, 1.6, 1.6))],
    }


def test_the_serving_bars_are_each_runtimes_latency_and_throughput(drawn):
    """One row of panels per CPU: batch-1 p50 and batch-32 sentences/s of every runtime, the
    agreement written beside each bar, a runtime below 99% marked."""
    latency, throughput = drawn[0]["cpu_runtimes"].axes
    widths = [[patch.get_width() for patch in panel.patches] for panel in (latency, throughput)]
    assert widths == [[4.0, 3.0], [500.0, 300.0]]
    labels = [text.get_text() for text in latency.texts]
    assert labels == [" 4.0, 100.0%", " 3.0, 95.0% (below 99%)"]
    # The CPU and the date head the row, inside the figure.
    assert latency.get_title(loc="left").splitlines()[0] == "Xeon AMX, 2026-12-01"


def test_the_long_input_lines_are_each_sides_seconds_and_memory(drawn):
    time_axis, memory_axis = drawn[0]["long_documents"].axes
    lines = {line.get_label(): line for line in time_axis.lines}
    assert sorted(lines) == ["modernbert-base, keras_bert", "modernbert-base, transformers (sdpa)"]
    ours = lines["modernbert-base, keras_bert"]
    assert list(ours.get_xdata()) == [512, 2048] and list(ours.get_ydata()) == [0.5, 2.0]
    memory = {line.get_label(): list(line.get_ydata()) for line in memory_axis.lines}
    assert memory["modernbert-base, transformers (sdpa)"] == [800 / 1024, 1200 / 1024]


def test_an_unknown_figure_is_refused():
    with pytest.raises(SystemExit):
        figures.main(["serving_latency"])
