"""The benchmarks' results files (`bench/results/*.jsonl`): one JSON line a finished run,
appended as it finishes, read back by the campaigns (to skip what is recorded) and by the
table writers, each line stamped with the revision of the code that ran (`git_revision`).

Example:
>>> import pathlib, tempfile
>>> results = pathlib.Path(tempfile.mkdtemp()) / "results" / "speed.jsonl"
>>> append_record(results, {"task": "sst2", "seconds": 1.5})
>>> read_records(results)
[{'task': 'sst2', 'seconds': 1.5}]
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
# What a results line's revision leaves out: the results files, which a campaign commits
# between its runs without changing the code that runs.
OUTSIDE_RESULTS = ["--", ".", ":(exclude)bench/results"]


def read_records(path: Path | None) -> list[dict]:
    """The lines of the results file `path`, in order; none if it does not exist yet."""
    if path is None or not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def append_record(path: Path, record: dict) -> None:
    """`record` as one more line of the results file `path` (created with its folders)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as results:
        results.write(json.dumps(record) + "\n")


def git_revision() -> str:
    """The last commit that changed something outside `bench/results/` (the code that runs),
    with "+changes" if tracked files outside it differ from that commit; "unknown" outside git.
    """

    def git(*arguments: str) -> str:
        completed = subprocess.run(
            ["git", *arguments, *OUTSIDE_RESULTS],
            capture_output=True,
            text=True,
            check=False,
            cwd=REPO_ROOT,
        )
        return completed.stdout.strip()

    revision = git("log", "-1", "--format=%h")
    if not revision:
        return "unknown"
    return revision + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")
