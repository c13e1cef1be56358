"""`PretrainingConfig`: everything a pretraining run needs, from flags or JSON."""

from __future__ import annotations

import dataclasses
from typing import Any

from keras_bert.data import PretrainingDataConfig
from keras_bert.data.streaming import StreamingConfig
from keras_bert.errors import ConfigError, check_not_negative, check_positive
from keras_bert.training.settings import RunSettings

# BERT pretrained 1M steps and warmed up over the first 10k of them (1%): a long run needs
# only a short warm-up, and every warm-up step at a low rate is a step not spent learning.
PRETRAINING_RUN = RunSettings(learning_rate=1e-4, warmup_fraction=0.01, verbose=1)


@dataclasses.dataclass
class PretrainingConfig:
    """Everything a pretraining run needs; `pipelines/pretrain.py` fills it from flags or JSON.

    Args:
        output_dir: backups (`backup/`), TensorBoard logs (`logs/`), `metrics.csv`, and at the
            end `pretrainer.keras` and a Google-format checkpoint (`checkpoint/`, which the
            directory itself reads as; ELECTRA's generator in `generator/`).
        vocabulary_file: the WordPiece `vocab.txt`; with `init_checkpoint`, the checkpoint's
            own unless one is given (a new vocabulary the checkpoint moves onto).
        lowercase: uncased tokenization.
        input_files: BERT-format text files (one sentence per line, blank line between docs),
            or TFRecord files of tokenized documents (`*.tfrecord`, see `document_stream`);
            streamed (`streaming_pretraining_dataset`), never read whole.
        tfds_name: or a TensorFlow Datasets text dataset (see `load_tfds_documents`).
        tfds_split, tfds_data_dir, tfds_text_feature: its split, data dir and text feature.
        tfrecord_pattern: or static examples written by `create_pretraining_data.py`.
        held_out_documents: documents kept out of training for evaluation (text/tfds input),
            written to `held_out.txt` in `output_dir`.
        model_preset: size of a randomly initialised model ("tiny" ... "large").
        model_config: or a dict of `BertConfig` fields (overrides `model_preset`); with
            `init_checkpoint`, changes to the checkpoint's config that keep its weights' shapes
            (e.g. `{"dropout_rate": 0.0}`).
        init_checkpoint: or a checkpoint to start from (heads restored when present).
        span_boundary_objective: add SpanBERT's span-boundary head and loss (pair it with
            `data.masking.span_masking`).
        replaced_token_detection: ELECTRA's objective instead of the masked LM's: a generator
            (a narrower masked LM sharing the model's embeddings) fills the masks with tokens
            drawn from its distribution, and the model, the discriminator, learns at every
            token whether it was replaced (`ElectraPretrainer`). Single segments only.
        generator_width: the generator's hidden size as a share of the discriminator's.
        discriminator_loss_weight: the discriminator's loss weight against the generator's
            masked-LM loss (ELECTRA: 50).
        data: a `PretrainingDataConfig` (or its dict).
        streaming: a `StreamingConfig` (or its dict): the buffers of text and tfds input.
        global_batch_size: examples per step over all replicas.
        total_steps: training steps (batches) of the whole run.
        steps_per_checkpoint: an epoch of `fit`: backup, logs and evaluation cadence.
        eval_steps: held-out batches per evaluation (0: no evaluation).
        time_budget_minutes: plan the run by time: as many whole checkpoint intervals as fit
            these minutes of training on this machine, at most `total_steps` (the step is
            timed on the first batches before training: `keras_bert.training.time_budget`).
            None: exactly `total_steps`.
        run: the `RunSettings` (or a dict of some of them, over `PRETRAINING_RUN`): learning
            rate and warm-up, optimizer, precision, strategy; its `seed` also seeds the data's
            pairs, masks and order.

    Example:
    >>> config = PretrainingConfig("runs/tiny", vocabulary_file="vocab.txt",
    ...                            input_files=["corpus.txt"], run={"learning_rate": 2e-3})
    >>> config.run.learning_rate, config.run.warmup_fraction
    (0.002, 0.01)
    """

    output_dir: str
    vocabulary_file: str | None = None
    lowercase: bool = True
    input_files: list[str] = dataclasses.field(default_factory=list)
    tfds_name: str | None = None
    tfds_split: str = "train"
    tfds_data_dir: str | None = None
    tfds_text_feature: str = "text"
    tfrecord_pattern: str | None = None
    held_out_documents: int = 0
    model_preset: str = "tiny"
    model_config: dict[str, Any] | None = None
    init_checkpoint: str | None = None
    span_boundary_objective: bool = False
    replaced_token_detection: bool = False
    generator_width: float = 0.25
    discriminator_loss_weight: float = 50.0
    data: PretrainingDataConfig = dataclasses.field(default_factory=PretrainingDataConfig)
    streaming: StreamingConfig = dataclasses.field(default_factory=StreamingConfig)
    global_batch_size: int = 32
    total_steps: int = 1000
    steps_per_checkpoint: int = 100
    eval_steps: int = 0
    time_budget_minutes: float | None = None
    run: RunSettings = PRETRAINING_RUN

    def __post_init__(self):
        if isinstance(self.data, dict):
            self.data = PretrainingDataConfig(**self.data)
        if isinstance(self.streaming, dict):
            self.streaming = StreamingConfig(**self.streaming)
        self.run = RunSettings.of(self.run, PRETRAINING_RUN)
        check_positive(
            global_batch_size=self.global_batch_size,
            total_steps=self.total_steps,
            steps_per_checkpoint=self.steps_per_checkpoint,
            time_budget_minutes=self.time_budget_minutes,
        )
        check_not_negative(eval_steps=self.eval_steps)
        if self.total_steps % self.steps_per_checkpoint:
            raise ConfigError(
                f"total_steps ({self.total_steps}) must be a multiple of steps_per_checkpoint "
                f"({self.steps_per_checkpoint}): a run resumes at checkpoint boundaries."
            )
        sources = [bool(self.input_files), bool(self.tfds_name), bool(self.tfrecord_pattern)]
        if sum(sources) != 1:
            raise ConfigError("Give exactly one of input_files, tfds_name, tfrecord_pattern.")
        if self.replaced_token_detection and (
            self.data.sentence_pairs or self.span_boundary_objective
        ):
            raise ConfigError(
                "Replaced-token detection trains on single segments, without a sentence-pair or "
                "span-boundary head: --next-sentence-prediction false, "
                "--span-boundary-objective false."
            )
        if not 0 < self.generator_width <= 1 or self.discriminator_loss_weight <= 0:
            raise ConfigError(
                f"generator_width must be in (0, 1] and discriminator_loss_weight positive, got "
                f"{self.generator_width} and {self.discriminator_loss_weight}."
            )
        if not self.tfrecord_pattern and not self.vocabulary_file and not self.init_checkpoint:
            raise ConfigError("Text input needs a vocabulary_file (or an init_checkpoint's).")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
