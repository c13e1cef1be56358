"""The fine-tuning recipes, as data: what `FinetuningConfig` starts from (and what a task model
compiles with when `fit` finds it uncompiled), and the recipes of the field's benchmarks: for
each task the settings that scored best on its dev split with the MiniLM-L6 checkpoint
(docs/benchmarks.md holds the runs behind them). A task's recipe is a dict of
`FinetuningConfig` fields (`run` for its `RunSettings`), the defaults of `pipelines.glue`,
`pipelines.finetune_ner` and `pipelines.finetune_qa`.

Example:
>>> FINETUNING_RUN.learning_rate, FINETUNING_RUN.warmup_fraction
(5e-05, 0.1)
"""

from __future__ import annotations

import copy

from keras_bert.training.settings import RunSettings

# The BERT paper's fine-tuning: a peak rate of 2e-5 ... 5e-5, warmed up over the first 10% of
# the steps. A run of a few epochs is short: the head starts random, and a longer warm-up keeps
# its first large gradients from undoing what the pretrained encoder knows. Its epochs can be
# seconds long: backed up once a minute, not each (a backup of MiniLM-L6 takes 0.7 s).
FINETUNING_RUN = RunSettings(learning_rate=5e-5, warmup_fraction=0.1, backup_interval_seconds=60)


def recipe(
    epochs: float,
    learning_rate: float,
    batch_size: int = 32,
    seq_length: int = 128,
    warmup_fraction: float = FINETUNING_RUN.warmup_fraction,
    precision: str = FINETUNING_RUN.precision,
) -> dict:
    """A recipe as `FinetuningConfig` fields."""
    run = {
        "learning_rate": learning_rate,
        "warmup_fraction": warmup_fraction,
        "precision": precision,
    }
    return {"epochs": epochs, "batch_size": batch_size, "seq_length": seq_length, "run": run}


# The precision of the tasks whose dev score in mixed_bfloat16 fell within or above their float32
# seeds' (3 seeds each, on a CPU with bfloat16 units; docs/benchmarks.md#training-precision):
# "auto", which trains in bfloat16 where the CPU's bfloat16 step is clearly faster and in float32
# elsewhere (an AVX2-only CPU at once). Tasks not measured so keep float32.
MEASURED_IN_BFLOAT16 = "auto"


# The BERT paper's fine-tuning, for GLUE tasks not measured here (QNLI, MNLI, QQP, WNLI).
BERT_PAPER_GLUE_RECIPE = recipe(epochs=3, learning_rate=5e-5)

# The GLUE tasks screened on their dev splits (seed 0; docs/benchmarks.md#recipes): a rate of
# 1e-4 scored at or above 5e-5 on RTE, MRPC and STS-B, and the small RTE and STS-B gained from
# 6 epochs where MRPC lost. CoLA and SST-2, with 8.5k and 67k examples, take the rate with 3 epochs.
# RTE, over 3 seeds, takes batch 16 at 3e-5 (twice the updates, each smaller): 57.40%
# (56.68-57.76) against 55.72% for batch 32 at 5e-5 and 55.48% at 1e-4.
# RoBERTa's GLUE warm-up, 6% of the steps, against 10%, in bfloat16 seed for seed: RTE 58.48%
# against 57.16% (3 seeds, each higher), CoLA's Matthews 27.36 against 26.31 (5 seeds, 4 higher),
# STS-B 86.28 against 86.24 (2 of 3 higher); in float32, 58.24 against 57.40, 25.37 against
# 26.28 (5 seeds, 1 higher) and 85.91 against 85.80. A warm-up moves where its seeds, paired
# over both precisions, gain on average: CoLA's 10 pairs +0.07 (5 higher) keep 6%, as one per
# precision would fit a gap (1.96 points) within the seeds' noise (standard error 1.3). MRPC
# keeps 10%: 83.35 against 83.15 in bfloat16 (each seed higher) but 6% lost on each float32
# seed (82.57 against 83.89): -0.56 over its 6 pairs.
SCREENED_GLUE_WARMUP = 0.06
GLUE_RECIPES: dict[str, dict] = {
    "cola": recipe(
        epochs=3,
        learning_rate=1e-4,
        warmup_fraction=SCREENED_GLUE_WARMUP,
        precision=MEASURED_IN_BFLOAT16,
    ),
    "sst2": recipe(epochs=3, learning_rate=1e-4, precision=MEASURED_IN_BFLOAT16),
    "mrpc": recipe(epochs=3, learning_rate=1e-4, precision=MEASURED_IN_BFLOAT16),
    "stsb": recipe(
        epochs=6,
        learning_rate=1e-4,
        warmup_fraction=SCREENED_GLUE_WARMUP,
        precision=MEASURED_IN_BFLOAT16,
    ),
    "rte": recipe(
        epochs=6,
        learning_rate=3e-5,
        batch_size=16,
        warmup_fraction=SCREENED_GLUE_WARMUP,
        precision=MEASURED_IN_BFLOAT16,
    ),
}

# Sentence classification (`pipelines.finetune_classifier`): the movie snippets' 85.8% dev
# accuracy at 3 epochs (the fine-tuning default of 2: 84.0-84.9%).
CLASSIFIER_RECIPE = {"epochs": 3}

# Token classification (`pipelines.finetune_ner`): WNUT-16's 0.479 entity F1 (3 seeds). In
# bfloat16 CoNLL-2003 scored 90.29 against float32's 90.47 (seed 0 each; the anchors' 3 seeds
# span 0.38).
NER_RECIPE = {"epochs": 5, "run": {"precision": MEASURED_IN_BFLOAT16}}

# Extractive QA (`pipelines.finetune_qa`): BERT's SQuAD windows of 384 tokens, at 1e-4: on 2,000
# of the SQuAD split's training questions, 2 epochs, seed 0, it scored 50.69 F1 (36.78 exact
# match) on the dev split against 16.17 (9.46) for BERT's 3e-5 (docs/benchmarks.md#recipes).
# In bfloat16 the whole split scored 64.68 F1 / 51.88 exact match against float32's 64.53 / 51.76
# (seed 0 each).
QA_RECIPE = {
    "seq_length": 384,
    "batch_size": 12,
    "run": {"learning_rate": 1e-4, "precision": MEASURED_IN_BFLOAT16},
}

# How `pipelines.finetune_qa` cuts passages into windows and reads answers out of them: BERT's
# SQuAD settings (the stride between windows, the question pieces kept, the candidates per
# window and the longest answer, in pieces).
QA_WINDOWS = {"doc_stride": 128, "max_query_length": 64, "n_best": 20, "max_answer_length": 30}


def recipe_flags(recipe: dict) -> dict:
    """A recipe as a job's flag defaults: its run settings beside the other fields.

    Example:
    >>> recipe_flags(QA_RECIPE)
    {'seq_length': 384, 'batch_size': 12, 'learning_rate': 0.0001, 'precision': 'auto'}
    """
    return {
        **{key: value for key, value in recipe.items() if key != "run"},
        **recipe.get("run", {}),
    }


def glue_recipe(task: str) -> dict:
    """The recipe of a GLUE task (tfds spelling), the BERT paper's where none was measured.

    Example:
    >>> glue_recipe("wnli") == BERT_PAPER_GLUE_RECIPE
    True
    """
    return copy.deepcopy(GLUE_RECIPES.get(task, BERT_PAPER_GLUE_RECIPE))
