"""The Python examples of the README and of the pages it maps (`docs/*.md`) run as written."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# Pages whose examples need a server that another test starts: they run there.
RUN_ELSEWHERE = {
    "checkpoints_by_name.md",  # tests/checkpoints/test_docs_by_name.py (loopback Hub)
    "publishing.md",  # tests/publishing/test_docs_publishing.py (loopback Hub, transformers)
}


def mapped_pages() -> list[Path]:
    """The `docs/*.md` pages in the order the README's map lists them (examples on a page may
    continue from the README's)."""
    listed = re.findall(r"\]\((docs/[\w-]+\.md)\)", README.read_text("utf-8"))
    return [ROOT / name for name in dict.fromkeys(listed) if (ROOT / name).exists()]


def test_the_readme_maps_every_page():
    assert mapped_pages()[0].name == "library.md"
    assert set((ROOT / "docs").glob("*.md")) == set(mapped_pages())


@pytest.mark.slow
def test_documentation_python_examples_run():
    namespace: dict = {}
    ran = 0
    for page in [README, *(page for page in mapped_pages() if page.name not in RUN_ELSEWHERE)]:
        for block in re.findall(r"```python\n(.*?)```", page.read_text("utf-8"), re.S):
            exec(compile(block, str(page), "exec"), namespace)
            ran += 1
    assert ran >= 6
    assert namespace["outputs"]["sequence_output"].shape == (2, 128, 384)
