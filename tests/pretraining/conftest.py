"""The training tests' small real pretraining setup, for the pretraining job's tests."""

from tests.training.conftest import restore_dtype_policy, small_config, small_corpus

__all__ = ["restore_dtype_policy", "small_config", "small_corpus"]
