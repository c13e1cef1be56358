"""Runs signatures of exported SavedModels in a fresh Python process with only TensorFlow.

The child imports `tensorflow` and `tensorflow_text` and nothing else (it checks that no
keras_bert module got imported): TensorFlow Serving has only their ops.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tensorflow-text ops)

    def to_json(value):
        if isinstance(value, list):
            return [to_json(item) for item in value]
        if isinstance(value, bytes):
            return value.decode("utf-8")
        if isinstance(value, tf.Tensor):
            return to_json(value.numpy().tolist())
        return value

    calls = json.loads(sys.stdin.read())
    results, models = [], {}
    for call in calls:
        path = call["export_dir"]
        if path not in models:
            models[path] = tf.saved_model.load(path)
        signature = models[path].signatures[call["signature"]]
        inputs = {
            name: tf.constant(value, dtype=tf.string if call["dtype"] == "string" else tf.int32)
            for name, value in call["inputs"].items()
        }
        outputs = signature(**inputs)
        results.append({name: to_json(value) for name, value in outputs.items()})
    leaked = sorted(name for name in sys.modules if name.split(".")[0] == "keras_bert")
    print(json.dumps({"results": results, "leaked_modules": leaked}))
    """
)


def run_signatures(calls: list[dict]) -> list[dict]:
    """Runs `calls` (export_dir, signature, dtype "string"/"int32", inputs) in a fresh process.

    Returns each call's outputs as JSON values (strings decoded from UTF-8).
    """
    calls = [{**call, "export_dir": str(Path(call["export_dir"]))} for call in calls]
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        input=json.dumps(calls),
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"fresh process failed:\n{result.stderr[-4000:]}")
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    if answer["leaked_modules"]:
        raise RuntimeError(f"the fresh process imported {answer['leaked_modules']}")
    return answer["results"]
