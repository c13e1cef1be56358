"""Distillation: DistilBERT- and TinyBERT-style students trained from a frozen teacher."""

from keras_bert.distillation.augmentation import augment_texts
from keras_bert.distillation.distiller import DistillationLosses, Distiller
from keras_bert.distillation.features import encoder_features, task_features
from keras_bert.distillation.masked_lm_distillation import distill_masked_lm
from keras_bert.distillation.student import initialize_student, layer_map, spread_layers

__all__ = [
    "augment_texts",
    "DistillationLosses",
    "Distiller",
    "distill_masked_lm",
    "encoder_features",
    "initialize_student",
    "layer_map",
    "spread_layers",
    "task_features",
]
