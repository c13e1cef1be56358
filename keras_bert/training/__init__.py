"""Training glue: distribution strategies, optimizers and learning-rate schedules."""

from keras_bert.training.optimization import WarmupLinearDecay, create_optimizer
from keras_bert.training.strategy import STRATEGY_NAMES, jit_compile_supported, resolve_strategy

__all__ = [
    "STRATEGY_NAMES",
    "WarmupLinearDecay",
    "create_optimizer",
    "jit_compile_supported",
    "resolve_strategy",
]
