"""Reading and writing pretrained BERT checkpoints (Hugging Face safetensors, Google TF1)."""

from keras_bert.checkpoints.checkpoint import Checkpoint
from keras_bert.checkpoints.google import save_google_checkpoint
from keras_bert.checkpoints.location import (
    CheckpointFiles,
    checkpoint_vocabulary_file,
    find_checkpoint,
    load_checkpoint,
)
from keras_bert.checkpoints.variables import encoder_variables, restore_encoder_weights
from keras_bert.errors import CheckpointError

__all__ = [
    "Checkpoint",
    "CheckpointError",
    "CheckpointFiles",
    "checkpoint_vocabulary_file",
    "encoder_variables",
    "find_checkpoint",
    "load_checkpoint",
    "restore_encoder_weights",
    "save_google_checkpoint",
]
