"""What every training job shares: run settings, strategies, optimizers, precision, callbacks."""

from keras_bert.training.callbacks import (
    AtomicBackupAndRestore,
    completed_epochs,
    training_callbacks,
)
from keras_bert.training.fused_adamw import FusedAdamW
from keras_bert.training.optimization import WarmupLinearDecay, create_optimizer
from keras_bert.training.precision import PrecisionChoice, TrainStepShape, resolve_precision
from keras_bert.training.run import fit_resumable
from keras_bert.training.settings import RunSettings
from keras_bert.training.strategy import STRATEGY_NAMES, jit_compile_supported, resolve_strategy
from keras_bert.training.workarounds import enable_multi_worker_fit

__all__ = [
    "STRATEGY_NAMES",
    "AtomicBackupAndRestore",
    "FusedAdamW",
    "PrecisionChoice",
    "RunSettings",
    "TrainStepShape",
    "WarmupLinearDecay",
    "completed_epochs",
    "create_optimizer",
    "enable_multi_worker_fit",
    "fit_resumable",
    "jit_compile_supported",
    "resolve_precision",
    "resolve_strategy",
    "training_callbacks",
]
