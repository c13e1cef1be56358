"""ElectraPretrainer: ELECTRA's replaced-token-detection pretraining, a generator that fills the
masks and a discriminator that tells, at every token, whether it was replaced."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import keras

from keras_bert.checkpoints.location import RUN_CHECKPOINT
from keras_bert.checkpoints.task_heads import PRETRAINING
from keras_bert.checkpoints.variables import encoder_variables
from keras_bert.config import BertConfig
from keras_bert.models.encoder import INPUT_NAMES, BertEncoder, encoder_inputs
from keras_bert.models.masked_lm import BertMaskedLM, masked_lm_head_variables
from keras_bert.models.masked_lm_objective import MaskedLMAccuracy, MaskedLMLoss
from keras_bert.models.pretrainer import (
    pretraining_encoder,
    read_pretraining_checkpoint,
    restore_pretraining_heads,
)
from keras_bert.models.pretraining_task import PretrainingTask
from keras_bert.models.replaced_token_detector import (
    REPLACED_TOKEN_SCOPE,
    BertReplacedTokenDetector,
    replaced_token_head_variables,
)
from keras_bert.models.replaced_token_objective import (
    ReplacedTokenAccuracy,
    ReplacedTokenLoss,
    ReplacedTokenSampler,
)

if TYPE_CHECKING:
    from keras_bert.checkpoints import CheckpointFiles

# The paper's settings: a generator a quarter of the discriminator's width (ELECTRA-Small's and
# -Large's; 1/3 for Base), the discriminator's loss weighted 50 against the generator's.
GENERATOR_WIDTH = 0.25
DISCRIMINATOR_LOSS_WEIGHT = 50.0
# ELECTRA's generator heads are 64 wide, as BERT's.
GENERATOR_HEAD_SIZE = 64
# The policy of the generator where the run's computes in bfloat16. A generator that narrow
# (32 wide in pipelines/recipes/electra_tiny.json) learns worse in bfloat16 on some CPUs: on an
# AMD Zen 5 (AVX512_BF16, no AMX) its held-out accuracy at [MASK] after the recipe's first 250
# steps was 0.079 in bfloat16, 0.097 with its encoder in float32, 0.101 with its head in
# float32, 0.106 with both, 0.104 all in float32. In float32 the step costs 5% more (220 ->
# 232 ms there); the discriminator keeps the run's policy.
BFLOAT16_GENERATOR_POLICY = "float32"
# The inputs beyond the encoder's: where the masks are, and what they hide.
MASKED_INPUT_NAMES = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")
# The output that carries the discriminator's labels (from the generator's samples) to its loss.
LABELS_OUTPUT = "replaced_token_labels"
# Where a `pipelines.pretrain` run of the objective writes its generator (its discriminator goes
# where every run writes its model, `RUN_CHECKPOINT`).
GENERATOR_CHECKPOINT = "generator"


def generator_config(discriminator: BertConfig, width: float = GENERATOR_WIDTH) -> BertConfig:
    """The generator of a discriminator, as ELECTRA sizes it: its layers at `width` times its
    hidden size (feed-forward 4×, heads of 64 dimensions, at least one), reading the
    discriminator's embeddings (its embedding width, projected to the generator's), no pooler.

    Example:
    >>> config = generator_config(BertConfig.preset("small"))
    >>> config.hidden_size, config.num_heads, config.intermediate_size, config.embedding_size
    (128, 2, 512, 512)
    """
    hidden_size = max(1, round(discriminator.hidden_size * width))
    num_heads = max(1, hidden_size // GENERATOR_HEAD_SIZE)
    while hidden_size % num_heads:
        num_heads -= 1
    return discriminator.replace(
        hidden_size=hidden_size,
        num_heads=num_heads,
        intermediate_size=4 * hidden_size,
        embedding_size=discriminator.embedding_size or discriminator.hidden_size,
        pooler=False,
    )


def generator_dtype(dtype: str | keras.DTypePolicy | None) -> str | keras.DTypePolicy | None:
    """The generator's dtype policy in a pretrainer of policy `dtype` (None: Keras' global
    one): float32 where that computes in bfloat16 (`BFLOAT16_GENERATOR_POLICY`), else `dtype`.

    Example:
    >>> generator_dtype("mixed_bfloat16"), generator_dtype("mixed_float16")
    ('float32', 'mixed_float16')
    """
    policy = keras.dtype_policies.get(dtype) if dtype is not None else keras.config.dtype_policy()
    return BFLOAT16_GENERATOR_POLICY if policy.compute_dtype == "bfloat16" else dtype


@keras.saving.register_keras_serializable(package="keras_bert")
class ElectraPretrainer(PretrainingTask):
    """ELECTRA's pretraining (Clark et al. 2020): a generator, a masked LM narrower than the
    discriminator that shares its token, segment and position embeddings, predicts the masked
    tokens (in float32 where the run computes in bfloat16: `generator_dtype`); a token drawn
    from its distribution replaces each (no gradient through the draw);
    the discriminator (`BertReplacedTokenDetector`) learns at every real token whether it was
    replaced.

    Inputs: the encoder's `input_word_ids` (masked), `input_mask`, `input_type_ids`, and the
    masking's `masked_lm_positions`, `masked_lm_ids` (the tokens the masks hide) and
    `masked_lm_weights`, all `[batch, predictions]`. Outputs: `masked_lm`, the generator's
    logits `[batch, predictions, vocabulary]`; `replaced_token`, the discriminator's logits
    `[batch, sequence]`; and `replaced_token_labels`, 1.0 where its input was replaced.
    `compile()` defaults to the generator's masked-LM loss plus the discriminator's loss
    weighted 50 (`DISCRIMINATOR_LOSS_WEIGHT`; `loss_weights` change it), each with its
    accuracy, and BERT's pretraining rate (`PretrainingTask`); `fit` takes the batches of
    `keras_bert.data.pretraining_dataset(...).map(split_replaced_token_features)`. The model
    to fine-tune or publish is the discriminator (`encoder`, `discriminator`):
    `save_checkpoint` writes it as `ElectraForPreTraining`.

    Args:
        encoder: the discriminator's `BertEncoder`, or a `BertConfig` (or its dict) to build
            one.
        generator_width: the generator's hidden size as a share of the discriminator's
            (`generator_config`).
        seed: the seed of the generator's draws (default: from Keras' global seed).

    Example:
    >>> import numpy as np
    >>> config = BertConfig.preset("tiny", vocab_size=100, model_type="electra", pooler=False)
    >>> model = ElectraPretrainer(config)
    >>> outputs = model({
    ...     "input_word_ids": np.array([[2, 7, 4, 3]]),
    ...     "input_mask": np.array([[1, 1, 1, 1]]),
    ...     "input_type_ids": np.array([[0, 0, 0, 0]]),
    ...     "masked_lm_positions": np.array([[2, 0]]),
    ...     "masked_lm_ids": np.array([[9, 0]]),
    ...     "masked_lm_weights": np.array([[1.0, 0.0]]),
    ... })
    >>> tuple(outputs["masked_lm"].shape), tuple(outputs["replaced_token"].shape)
    ((1, 2, 100), (1, 4))
    >>> model.generator.encoder.bert_config.hidden_size, model.encoder.bert_config.hidden_size
    (32, 128)
    """

    uses_pooled_output = False
    architecture_task = PRETRAINING

    def __init__(
        self,
        encoder: BertEncoder | BertConfig | dict[str, Any],
        generator_width: float = GENERATOR_WIDTH,
        seed: int | None = None,
        **kwargs,
    ):
        dtype = kwargs.pop("dtype", None)
        if not isinstance(encoder, BertEncoder):
            config = BertConfig.from_dict(encoder) if isinstance(encoder, dict) else encoder
            encoder = BertEncoder(config, dtype=dtype, name="encoder")
        config = generator_config(encoder.bert_config, generator_width)

        # Layers
        generator_policy = generator_dtype(dtype)
        generator = BertMaskedLM(
            BertEncoder(
                config,
                shared_embeddings=encoder.embeddings,
                dtype=generator_policy,
                name="generator_encoder",
            ),
            dtype=generator_policy,
            name="generator",
        )
        sampler = ReplacedTokenSampler(seed, name="replaced_token_sampler")
        detector = BertReplacedTokenDetector(encoder, dtype=dtype, name="discriminator")

        # Functional model
        inputs = encoder_inputs()
        for name, dtype_name in zip(MASKED_INPUT_NAMES, ("int32", "int32", "float32"), strict=True):
            inputs[name] = keras.Input(shape=(None,), dtype=dtype_name, name=name)
        encoder_input = {name: inputs[name] for name in INPUT_NAMES}
        masked_lm = generator(
            {**encoder_input, "masked_lm_positions": inputs["masked_lm_positions"]}
        )["masked_lm"]
        replaced_word_ids, replaced = sampler(
            masked_lm, *(inputs[name] for name in ("input_word_ids", *MASKED_INPUT_NAMES))
        )
        replaced_token = detector({**encoder_input, "input_word_ids": replaced_word_ids})
        outputs = {
            "masked_lm": masked_lm,
            "replaced_token": replaced_token,
            LABELS_OUTPUT: replaced,
        }
        super().__init__(encoder, outputs, inputs=inputs, dtype=dtype, **kwargs)

        # Config
        self.generator = generator
        self.discriminator = detector
        self.sampler = sampler
        self.generator_width = generator_width
        self.seed = seed

    def default_loss(self) -> dict[str, keras.losses.Loss]:
        """The generator's masked-LM loss (over real predictions) and the discriminator's
        replaced-token loss (over real tokens)."""
        return {"masked_lm": MaskedLMLoss(), "replaced_token": ReplacedTokenLoss()}

    def default_loss_weights(self) -> dict[str, float]:
        """ELECTRA's: the discriminator's loss 50 times the generator's."""
        return {"masked_lm": 1.0, "replaced_token": DISCRIMINATOR_LOSS_WEIGHT}

    def default_weighted_metrics(self, loss_weights: Any) -> dict[str, list]:
        """`masked_lm_accuracy` (the generator's) and `replaced_token_accuracy`."""
        return {
            "masked_lm": [MaskedLMAccuracy(name="accuracy")],
            "replaced_token": [ReplacedTokenAccuracy(name="accuracy")],
        }

    def training_targets(self, x, y, y_pred, sample_weight):
        """The discriminator learns the labels the sampler drew, at every real token."""
        y = {**(y or {}), "replaced_token": y_pred[LABELS_OUTPUT]}
        mask = keras.ops.cast(x["input_mask"], "float32")
        sample_weight = {**(sample_weight or {}), "replaced_token": mask}
        y_pred = {name: y_pred[name] for name in ("masked_lm", "replaced_token")}
        return y, y_pred, sample_weight

    def head_variables(self) -> dict[str, keras.Variable]:
        """The discriminator's head: the run publishes as `ElectraForPreTraining`."""
        return self.discriminator.head_variables()

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "generator_width": self.generator_width, "seed": self.seed}

    @classmethod
    def from_checkpoint(
        cls,
        path: str | os.PathLike | CheckpointFiles,
        dtype: str | None = None,
        vocabulary_file: str | os.PathLike | None = None,
        generator_width: float = GENERATOR_WIDTH,
        revision: str | None = None,
        **config_changes: Any,
    ) -> ElectraPretrainer:
        """Continued pretraining from a checkpoint (a directory, a run directory or a Hub id at
        `revision`): its encoder is the discriminator, with the replaced-token head where the
        checkpoint has one (`ElectraForPreTraining`'s, a run's); the generator starts fresh at
        `generator_width`. `vocabulary_file` and `config_changes` as
        `BertPretrainer.from_checkpoint` takes them.
        """
        checkpoint = read_pretraining_checkpoint(path, vocabulary_file, revision)
        encoder = pretraining_encoder(checkpoint, dtype, **config_changes)
        model = cls(encoder, generator_width=generator_width, dtype=dtype)
        head = replaced_token_head_variables(model.discriminator.replaced_token_head)
        restore_pretraining_heads({REPLACED_TOKEN_SCOPE: head}, checkpoint)
        return model


def electra_checkpoints(
    model: ElectraPretrainer,
) -> dict[str, tuple[BertConfig, dict[str, keras.Variable]]]:
    """The checkpoints of an ELECTRA pretrainer by folder name, each its config and canonical
    variables: the discriminator with its replaced-token head (`RUN_CHECKPOINT`: what
    fine-tuning reads) and the generator with its masked-LM head (`GENERATOR_CHECKPOINT`; its
    embeddings are the discriminator's).

    Example:
    >>> config = BertConfig.preset("tiny", vocab_size=100, model_type="electra", pooler=False)
    >>> checkpoints = electra_checkpoints(ElectraPretrainer(config))
    >>> {name: config.hidden_size for name, (config, _) in checkpoints.items()}
    {'checkpoint': 128, 'generator': 32}
    """
    discriminator, generator = model.discriminator, model.generator
    return {
        RUN_CHECKPOINT: (
            model.bert_config,
            encoder_variables(model.encoder)
            | replaced_token_head_variables(discriminator.replaced_token_head),
        ),
        GENERATOR_CHECKPOINT: (
            generator.encoder.bert_config,
            encoder_variables(generator.encoder)
            | masked_lm_head_variables(generator.masked_lm_head),
        ),
    }
