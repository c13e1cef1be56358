"""The pretraining job: its config, data, model and saved results (`pipelines.pretrain`)."""

from keras_bert.pretraining.config import PRETRAINING_RUN, PretrainingConfig
from keras_bert.pretraining.trainer import (
    build_datasets,
    build_pretrainer,
    pretraining_loss_weights,
    run_pretraining,
    save_pretrainer_checkpoint,
)

__all__ = [
    "PRETRAINING_RUN",
    "PretrainingConfig",
    "build_datasets",
    "build_pretrainer",
    "pretraining_loss_weights",
    "run_pretraining",
    "save_pretrainer_checkpoint",
]
