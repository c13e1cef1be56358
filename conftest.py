"""Suite-wide settings: the working folder, and how tests share the two workers of a run.

Every test and doctest runs in the repository root, wherever pytest was started: the docstring
examples read `../shared` as a user in a checkout beside it would.

`make test` runs the suite on two worker processes (`pytest-xdist`, `--dist loadgroup`). A
module's tests stay on one worker, so its module-scoped fixtures are built once; tests that
read one of the session's expensive artefacts (the exports of every task, the tokenized
Wikipedia sample) go to one worker together, so each artefact is built once per run too.

A worker runs hundreds of modules in one process. What a module built is released when its tests
end (its own cached builders, Keras' global state, the allocator's free pages): a worker that
kept it held 11 GiB by the end of a run, and its last tests ran 20x slower than alone. What
survives that release is the worker's lasting state (imported modules, session fixtures, traced
functions): it goes to the collector's permanent generation (`gc.freeze`), so later collections
scan only what the next modules build. Without it each module's collection walked every object
the worker ever kept: 2.4 s a module by the end, a fifth of the suite's time (Zen 5, clean
clone: 21:27 -> 17:01 minutes). Cycles among frozen objects are never collected: the largest
worker's peak grew from 9.1 to 10.1 GB.

The workers (started after this file is read) and their children use two malloc arenas, not one
per thread of TensorFlow's pools, whose free pages no trim returns. Each runs TensorFlow on one
inter-op and one intra-op thread: two workers share two cores, and a second thread per pool only
spun against the other worker (the whole suite on a clean clone, Zen 5: 17:01 -> 15:00 minutes
of pytest).

TensorFlow starts as every job starts it (`pipelines/__init__.py`): with oneDNN's kernels on where
TensorFlow would leave them off although they are faster (AVX2 without AVX-512), so the tests and
the jobs they run in subprocesses compute with the same kernels on every CPU.
"""

import ctypes
import gc
import inspect
import os
from pathlib import Path

import pipelines  # noqa: F401 (TensorFlow as the jobs start it, before Keras imports it)

# isort: split
import keras
import pytest

REPOSITORY_ROOT = Path(__file__).resolve().parent
os.environ.setdefault("MALLOC_ARENA_MAX", "2")
os.environ.setdefault("TF_NUM_INTEROP_THREADS", "1")
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")

# Session fixtures that take tens of seconds to build, and the worker group of their readers.
_EXPENSIVE_SESSION_FIXTURES = {
    "exported_base": "exports",
    "onnx_exported_base": "exports",
    "serving_modules": "exports",
    "wikipedia_documents": "wikipedia_documents",
}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the marks into the test ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks each test with its `xdist_group`: its module's path, or the group of an expensive
    fixture that a test of its module reads (the whole module follows it)."""
    groups = {}
    for item in items:
        module = item.path.relative_to(REPOSITORY_ROOT).as_posix()
        groups.setdefault(module, module)
        for fixture, group in _EXPENSIVE_SESSION_FIXTURES.items():
            if fixture in item.fixturenames:
                groups[module] = group
    for item in items:
        item.add_marker(
            pytest.mark.xdist_group(groups[item.path.relative_to(REPOSITORY_ROOT).as_posix()])
        )


@pytest.fixture(autouse=True)
def _run_in_the_repository_root(monkeypatch):
    monkeypatch.chdir(REPOSITORY_ROOT)


@pytest.fixture(autouse=True, scope="module")
def _release_what_the_module_built(request: pytest.FixtureRequest):
    yield
    for function in vars(request.module).values():
        if inspect.getmodule(function) is request.module and hasattr(function, "cache_clear"):
            function.cache_clear()
    keras.backend.clear_session(free_memory=True)
    gc.freeze()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
