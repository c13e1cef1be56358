"""Serving export: string signatures, TF Serving layout, warm-up requests, op check, config."""

from keras_bert.decoding.buckets import length_buckets
from keras_bert.export.exporter import export_for_serving
from keras_bert.export.layout import VersionExistsError, existing_versions, next_version
from keras_bert.export.op_check import UnsupportedOpError, check_serving_ops, saved_model_ops
from keras_bert.export.precision import AgreementTolerance, PrecisionAgreementError
from keras_bert.export.server_config import docker_command, write_server_config
from keras_bert.export.signatures import (
    ClassifierServing,
    EncoderServing,
    MaskedLMServing,
    QuestionAnswererServing,
    TokenClassifierServing,
    serving_module,
)

__all__ = [
    "AgreementTolerance",
    "ClassifierServing",
    "EncoderServing",
    "MaskedLMServing",
    "PrecisionAgreementError",
    "QuestionAnswererServing",
    "TokenClassifierServing",
    "UnsupportedOpError",
    "VersionExistsError",
    "check_serving_ops",
    "docker_command",
    "existing_versions",
    "export_for_serving",
    "length_buckets",
    "next_version",
    "saved_model_ops",
    "serving_module",
    "write_server_config",
]
