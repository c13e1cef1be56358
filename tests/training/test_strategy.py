"""Which strategies and precisions may compile train steps with XLA."""

import tensorflow as tf

from keras_bert.training.strategy import jit_compile_supported


def test_xla_with_bfloat16_on_cpu_is_allowed_with_a_warning(caplog):
    strategy = tf.distribute.get_strategy()
    assert jit_compile_supported(strategy, True, "mixed_bfloat16")
    assert "XLA does not use oneDNN's bfloat16" in caplog.text
    caplog.clear()
    assert jit_compile_supported(strategy, True, "float32") and not caplog.text
    assert not jit_compile_supported(strategy, False, "mixed_bfloat16")
