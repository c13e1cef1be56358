"""Loading holds a checkpoint's weights once: XLM-R's 250,002-token table at two widths, each
loaded in a fresh process (bench/bench_xlmr_memory.py measures base's stages)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.bench_xlmr_memory import write_checkpoint

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]


def _anonymous_memory_of_loading(directory: Path) -> int:
    """MiB of anonymous memory that `load_masked_lm` adds in a fresh process."""
    child = subprocess.run(
        [sys.executable, "-m", "bench.bench_xlmr_memory", "--stage", "load",
         "--checkpoint", str(directory)],
        capture_output=True, text=True, check=True, cwd=REPOSITORY_ROOT,
    )  # fmt: skip
    report = json.loads(child.stdout.strip().splitlines()[-1])
    return report["after"]["RssAnon"] - report["before"]["RssAnon"]


@pytest.mark.slow
def test_loading_adds_the_weights_once(tmp_path):
    """The wider checkpoint's 200 MiB more weights add no more than that and some slack (they
    added 3.9 times their size when every table was drawn at random, then assigned a copy)."""
    added, weights = {}, {}
    for size in ("tiny", "small"):
        (tmp_path / size).mkdir()
        weights[size] = write_checkpoint(tmp_path / size, size) / 2**20
        added[size] = _anonymous_memory_of_loading(tmp_path / size)
    more_weights = weights["small"] - weights["tiny"]
    assert more_weights > 150
    assert added["small"] - added["tiny"] < 1.25 * more_weights, (added, weights)
