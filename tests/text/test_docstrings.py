"""The `Example:` sections of keras_bert.text run as written."""

import doctest
import importlib

import pytest


@pytest.mark.parametrize("module", ["packing", "preprocessor", "wordpiece_tokenizer"])
def test_examples_run(module):
    results = doctest.testmod(importlib.import_module(f"keras_bert.text.{module}"))
    assert results.attempted > 0 and results.failed == 0
