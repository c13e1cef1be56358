"""The fine-tuning recipe's defaults, as data: what `FinetuningConfig` starts from, and what a
task model compiles with when `fit` finds it uncompiled.

Example:
>>> FINETUNING_RUN.learning_rate, FINETUNING_RUN.warmup_fraction
(5e-05, 0.1)
"""

from __future__ import annotations

from keras_bert.training.run import RunSettings

# The BERT paper's fine-tuning: a peak rate of 2e-5 ... 5e-5, warmed up over the first 10% of
# the steps. A run of a few epochs is short: the head starts random, and a longer warm-up keeps
# its first large gradients from undoing what the pretrained encoder knows.
FINETUNING_RUN = RunSettings(learning_rate=5e-5, warmup_fraction=0.1)
