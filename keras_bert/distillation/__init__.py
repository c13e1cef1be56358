"""Distillation: DistilBERT- and TinyBERT-style students trained from a frozen teacher."""

from keras_bert.distillation.augmentation import augment_texts
from keras_bert.distillation.distiller import DistillationLosses, Distiller
from keras_bert.distillation.features import encoder_features, task_features
from keras_bert.distillation.student import initialize_student, layer_map, spread_layers

__all__ = [
    "augment_texts",
    "DistillationLosses",
    "Distiller",
    "encoder_features",
    "initialize_student",
    "layer_map",
    "spread_layers",
    "task_features",
]
