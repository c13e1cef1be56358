"""Every job starts TensorFlow the same way (`pipelines/__init__.py`): without its log lines,
and with oneDNN's kernels on where TensorFlow would leave them off although they are faster."""

import json
import os
import subprocess
import sys

import pytest

from keras_bert.cpu import ONEDNN_SWITCH, tensorflow_leaves_faster_onednn_off

# What a job's process reports once `pipelines` has started TensorFlow.
REPORT_ONEDNN = (
    "import json, os, pipelines\n"
    "from tensorflow.python.util import _pywrap_util_port\n"
    f"print(json.dumps([os.environ.get({ONEDNN_SWITCH!r}), _pywrap_util_port.IsMklEnabled()]))\n"
)
# Graphs that held int64 ops oneDNN declines without AVX-512, each logging an error line: the
# unigram tokenizer's transpose, the masked-LM head's gather.
RUN_WORK = """
import tensorflow as tf
import keras_bert
preprocessor = keras_bert.load_preprocessor("../shared/reference/variants/xlm_roberta")
tf.function(preprocessor)(tf.constant(["Ein Satz.", "Une phrase."]))
generator = "../shared/reference/variants/electra/generator"
inputs = keras_bert.load_preprocessor(generator)(tf.constant(["a sentence with a masked word."]))
inputs["masked_lm_positions"] = tf.constant([[2, 5]])
keras_bert.load_masked_lm(generator).predict(inputs, verbose=0)
"""


def start_job_process(switch: str | None, work: str = "") -> tuple[list, str]:
    environment = {name: value for name, value in os.environ.items() if name != ONEDNN_SWITCH}
    if switch is not None:
        environment[ONEDNN_SWITCH] = switch
    completed = subprocess.run(
        [sys.executable, "-c", REPORT_ONEDNN + work],
        capture_output=True,
        text=True,
        check=True,
        env=environment,
    )
    return json.loads(completed.stdout), completed.stderr


@pytest.mark.skipif(
    not tensorflow_leaves_faster_onednn_off(), reason="TensorFlow's own choice stands here"
)
def test_a_job_turns_onednn_on_on_an_avx2_cpu_quietly():
    (switch, onednn_on), stderr = start_job_process(None, RUN_WORK)
    assert switch == "1" and onednn_on
    assert stderr == ""


def test_a_job_keeps_the_users_onednn_switch():
    (switch, onednn_on), _ = start_job_process("0")
    assert switch == "0" and not onednn_on
