"""Evaluation metrics computed as the reference evaluations compute them: the scores of
classification, GLUE, CoNLL entities and SQuAD in plain Python and numpy, so that a scorer needs
no TensorFlow (`masked_lm`, which runs a model, is the exception and is not imported here)."""

from keras_bert.metrics.classification import classification_scores, regression_scores
from keras_bert.metrics.entities import entity_scores
from keras_bert.metrics.squad import squad_scores

__all__ = ["classification_scores", "entity_scores", "regression_scores", "squad_scores"]
