"""Functional BERT models: the encoder and the task models built on it."""

from keras_bert.models.classifier import BertClassifier
from keras_bert.models.electra_pretrainer import ElectraPretrainer
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.masked_lm import BertMaskedLM
from keras_bert.models.masked_lm_objective import MaskedLMAccuracy, MaskedLMLoss
from keras_bert.models.pretrainer import BertPretrainer, pretrainer_variables
from keras_bert.models.question_answerer import BertQuestionAnswerer
from keras_bert.models.replaced_token_detector import BertReplacedTokenDetector
from keras_bert.models.task import BertTask
from keras_bert.models.token_classifier import BertTokenClassifier

__all__ = [
    "BertClassifier",
    "BertEncoder",
    "BertMaskedLM",
    "BertPretrainer",
    "BertQuestionAnswerer",
    "BertReplacedTokenDetector",
    "BertTask",
    "BertTokenClassifier",
    "ElectraPretrainer",
    "MaskedLMAccuracy",
    "MaskedLMLoss",
    "pretrainer_variables",
]
