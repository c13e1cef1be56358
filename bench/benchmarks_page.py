"""BENCHMARKS.md's generated parts: the sections that `table --write` commands rewrite between
their markers, and the short names of the CPUs its tables name.

Example:
>>> import pathlib, tempfile
>>> page = pathlib.Path(tempfile.mkdtemp()) / "BENCHMARKS.md"
>>> markers = ("<!-- speed -->", "<!-- /speed -->")
>>> _ = page.write_text("# Speed\\n<!-- speed -->\\nold\\n<!-- /speed -->\\n")
>>> write_between_markers(page, "| new |", markers)
>>> marked_text(page, markers)
'\\n| new |\\n'
"""

from __future__ import annotations

from pathlib import Path


def cpu_name(summary: str) -> str:
    """A CPU's short name in BENCHMARKS.md's table of CPUs, from its `cpu_summary`.

    Example:
    >>> cpu_name("AMD EPYC, 2 cores; has: avx2, fma, avx512f, avx512_bf16, avx_vnni; lacks: amx")
    'Zen 5'
    >>> cpu_name("AMD EPYC, 2 cores; has: avx2, fma; lacks: avx512f")
    'EPYC AVX2'
    >>> cpu_name("Intel(R) Xeon(R), 2 cores; has: avx512f, avx512_vnni; lacks: avx512_bf16")
    'Xeon no BF16'
    """
    has = set(summary.split("has: ")[-1].split(";")[0].split(", "))
    if summary.startswith("Intel"):
        if "amx_bf16" in has:
            return "Xeon AMX"
        return "Xeon no AMX" if "avx512_bf16" in has else "Xeon no BF16"
    if "avx512f" not in has:
        return "EPYC AVX2"
    if "avx512_bf16" in has:
        return "Zen 5" if "avx_vnni" in has else "Zen 4"
    return summary.split(",")[0]


def _marked_span(document: str, markers: tuple[str, str], path: Path) -> tuple[int, int]:
    """Where the text between `markers` begins and ends in `document` (read from `path`)."""
    start, end = (document.find(marker) for marker in markers)
    if start < 0 or end < start:
        raise SystemExit(f"{path}: no {markers[0]} ... {markers[1]} to write between.")
    return start + len(markers[0]), end


def marked_text(path: Path, markers: tuple[str, str]) -> str:
    """What lies between `markers` in `path`."""
    document = path.read_text("utf-8")
    start, end = _marked_span(document, markers, path)
    return document[start:end]


def write_between_markers(path: Path, text: str, markers: tuple[str, str]) -> None:
    """Replaces what lies between `markers` in `path` with `text`."""
    document = path.read_text("utf-8")
    start, end = _marked_span(document, markers, path)
    path.write_text(f"{document[:start]}\n{text}\n{document[end:]}", "utf-8")
