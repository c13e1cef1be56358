"""Evaluation metrics computed as the reference evaluations compute them."""

from keras_bert.metrics.classification import classification_scores, regression_scores
from keras_bert.metrics.entities import entity_scores
from keras_bert.metrics.squad import squad_scores

__all__ = ["classification_scores", "entity_scores", "regression_scores", "squad_scores"]
