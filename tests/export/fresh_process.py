"""Runs signatures of exported SavedModels in a separate Python process with only TensorFlow.

The child imports `tensorflow` and `tensorflow_text` and nothing else (every answer checks that
no keras_bert module got imported): TensorFlow Serving has only their ops. It loads exports with
`pipelines/query_export.py`'s `SessionModel`, as TensorFlow Serving's `LoadSavedModel` does
(`tf.saved_model.load` revives Python objects instead, and so passed exports that no model
server could run). One child serves the whole test session (one per pytest worker), as one model
server serves many exports: it is started on the first call and answers each batch of calls on a
line of JSON, loading each export once per batch, so the suite pays TensorFlow's start-up once
instead of once per export. It runs in the model server's environment (`SERVER_ENVIRONMENT`:
oneDNN on, as docs/serving.md starts TF Serving).
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from keras_bert.export.server_config import SERVER_ENVIRONMENT

# Generous: the first call of a signature traces it; the child never waits on the tests.
_ANSWER_TIMEOUT_SECONDS = 600

_SCRIPT = textwrap.dedent(
    """
    import ctypes, gc, importlib.util, json, sys, traceback

    # pipelines/query_export.py by its path: the package `pipelines` imports keras_bert.
    spec = importlib.util.spec_from_file_location("query_export", sys.argv[1])
    query_export = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(query_export)

    def answer(calls):
        # The exports of this request only: a session's worth would hold gigabytes.
        results, models = [], {}
        try:
            for call in calls:
                path = call["export_dir"]
                if path not in models:
                    models[path] = query_export.SessionModel(path)
                outputs = models[path].run(call["inputs"], call["signature"])
                results.append(
                    {name: query_export.decoded(value.tolist()) for name, value in outputs.items()}
                )
        finally:
            for model in models.values():
                model.close()
            # The sessions' memory back to the system: the child lives as long as the run.
            models.clear()
            gc.collect()
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        return results

    for line in sys.stdin:
        try:
            reply = {"results": answer(json.loads(line))}
        except Exception:
            reply = {"error": traceback.format_exc()}
        reply["leaked_modules"] = sorted(
            name for name in sys.modules if name.split(".")[0] == "keras_bert"
        )
        sys.stdout.write(json.dumps(reply) + "\\n")
        sys.stdout.flush()
    """
)
QUERY_SCRIPT = Path(__file__).parents[2] / "pipelines" / "query_export.py"


class ServingProcess:
    """A child Python process with only TensorFlow and tensorflow-text that answers calls.

    Its standard error goes to a temporary file (a full pipe would block it), quoted in errors.
    """

    def __init__(self):
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self._process = subprocess.Popen(
            [sys.executable, "-c", _SCRIPT, str(QUERY_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            # As the model server runs (docs/serving.md): oneDNN on, whatever the CPU.
            env=os.environ | dict(SERVER_ENVIRONMENT),
        )

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    def _stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read()[-4000:]

    def run(self, calls: list[dict]) -> list[dict]:
        self._process.stdin.write(json.dumps(calls) + "\n")
        self._process.stdin.flush()
        ready, _, _ = select.select([self._process.stdout], [], [], _ANSWER_TIMEOUT_SECONDS)
        line = self._process.stdout.readline() if ready else ""
        if not line:
            self.close()
            raise RuntimeError(f"the serving process gave no answer:\n{self._stderr_tail()}")
        answer = json.loads(line)
        if answer["leaked_modules"]:
            raise RuntimeError(f"the serving process imported {answer['leaked_modules']}")
        if "error" in answer:
            raise RuntimeError(f"the serving process failed:\n{answer['error'][-4000:]}")
        return answer["results"]

    def close(self) -> None:
        if self.alive:
            self._process.stdin.close()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
        self._stderr.close()


_process: ServingProcess | None = None


def run_signatures(calls: list[dict]) -> list[dict]:
    """Runs `calls` (export_dir, signature, inputs) in the session's serving process, started
    on first use (and again if a call killed it).

    Returns each call's outputs as JSON values (strings decoded from UTF-8).
    """
    global _process
    if _process is None or not _process.alive:
        _process = ServingProcess()
        atexit.register(_process.close)
    return _process.run([{**call, "export_dir": str(Path(call["export_dir"]))} for call in calls])
