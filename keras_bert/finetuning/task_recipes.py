"""The fine-tuning recipes of the field's benchmarks, as data: for each task the settings that
scored best on its dev split with the MiniLM-L6 checkpoint (docs/benchmarks.md holds the runs
behind them). Each recipe is a dict of `FinetuningConfig` fields (`run` for its `RunSettings`),
the defaults of `pipelines.glue`, `pipelines.finetune_ner` and `pipelines.finetune_qa`."""

from __future__ import annotations

import copy


def recipe(
    epochs: float,
    learning_rate: float,
    batch_size: int = 32,
    seq_length: int = 128,
    warmup_fraction: float = 0.1,
) -> dict:
    """A recipe as `FinetuningConfig` fields."""
    run = {"learning_rate": learning_rate, "warmup_fraction": warmup_fraction}
    return {"epochs": epochs, "batch_size": batch_size, "seq_length": seq_length, "run": run}


# The BERT paper's fine-tuning, for GLUE tasks not measured here (QNLI, MNLI, QQP, WNLI).
BERT_PAPER_GLUE_RECIPE = recipe(epochs=3, learning_rate=5e-5)

GLUE_RECIPES: dict[str, dict] = {
    "cola": recipe(epochs=3, learning_rate=5e-5),
    "sst2": recipe(epochs=3, learning_rate=5e-5),
    "mrpc": recipe(epochs=3, learning_rate=5e-5),
    "stsb": recipe(epochs=3, learning_rate=5e-5),
    "rte": recipe(epochs=3, learning_rate=5e-5),
}

# Token classification (`pipelines.finetune_ner`): WNUT-16's 0.479 entity F1 (3 seeds).
NER_RECIPE = {"epochs": 5}

# Extractive QA (`pipelines.finetune_qa`): BERT's SQuAD windows of 384 tokens.
QA_RECIPE = {"seq_length": 384, "batch_size": 12, "run": {"learning_rate": 3e-5}}


def glue_recipe(task: str) -> dict:
    """The recipe of a GLUE task (tfds spelling), the BERT paper's where none was measured.

    Example:
    >>> glue_recipe("wnli") == BERT_PAPER_GLUE_RECIPE
    True
    """
    return copy.deepcopy(GLUE_RECIPES.get(task, BERT_PAPER_GLUE_RECIPE))
