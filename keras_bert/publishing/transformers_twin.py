"""A keras_bert model's transformers twin: the architecture transformers builds for it, that
model's `config.json`, and the keras_bert weights under transformers' tensor names.

The encoder's tensors take the names of the family's rules read backwards
(`keras_bert.checkpoints.huggingface.huggingface_name`; ModernBERT's query, key and value joined
into its `Wqkv`), the heads' those of transformers' heads
(`keras_bert.checkpoints.task_heads`); each model says whether transformers has its head
(`BertTask.head_variables`). As transformers saves them, a bare model's names carry no prefix,
the masked-LM decoder is not written (it is the token embeddings), and a head that does not read
the pooler is written without it.

| keras_bert | transformers |
|---|---|
| `BertEncoder` | `BertModel`, `RobertaModel`, ... |
| `BertMaskedLM` | `*ForMaskedLM` |
| `BertClassifier` | `*ForSequenceClassification` (`problem_type` regression with 1 class) |
| `BertTokenClassifier` | `*ForTokenClassification` |
| `BertQuestionAnswerer` | `*ForQuestionAnswering` |
| `BertPretrainer` | `BertForPreTraining`, `AlbertForPreTraining` |
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import keras
import numpy as np

from keras_bert.checkpoints import encoder_variables
from keras_bert.checkpoints.huggingface import huggingface_name, join_fused_tensors
from keras_bert.checkpoints.task_heads import (
    MASKED_LM,
    PRETRAINING,
    QUESTION_ANSWERING,
    SEQUENCE_CLASSIFICATION,
    TOKEN_CLASSIFICATION,
)
from keras_bert.errors import ConfigError
from keras_bert.families import family
from keras_bert.models import BertEncoder, BertPretrainer, BertTask
from keras_bert.models.masked_lm import masked_lm_head_variables
from keras_bert.text.packing import BertPacker

# What a model is published as, besides its own head: its encoder alone, or a pretrainer's
# masked LM alone.
ENCODER = "encoder"
MASKED_LM_ONLY = "masked_lm"
TASKS = (ENCODER, MASKED_LM_ONLY)
# The Hub's pipeline of each architecture task (None: the bare model).
PIPELINE_TAGS = {
    None: "feature-extraction",
    MASKED_LM: "fill-mask",
    PRETRAINING: "fill-mask",
    SEQUENCE_CLASSIFICATION: "text-classification",
    TOKEN_CLASSIFICATION: "token-classification",
    QUESTION_ANSWERING: "question-answering",
}
_POOLER_SCOPE = "bert/pooler/"


@dataclasses.dataclass(frozen=True)
class TransformersTwin:
    """A keras_bert model as transformers' model of the same architecture.

    Args:
        architecture: transformers' class (`RobertaForSequenceClassification`).
        task: its architecture task (`ForSequenceClassification`); None for the bare model.
        config: its `config.json` values.
        tensors: its weights by transformers' names, float32, as transformers lays them out.
    """

    architecture: str
    task: str | None
    config: dict[str, Any]
    tensors: dict[str, np.ndarray]

    @property
    def pipeline_tag(self) -> str:
        """The Hub's pipeline for it (`text-classification`, `fill-mask`, ...)."""
        return PIPELINE_TAGS[self.task]


class _Published(NamedTuple):
    """What a model is published as: its encoder, the architecture task, the head's variables
    and `config.json` entries, and whether the head reads the pooler."""

    encoder: BertEncoder
    architecture_task: str | None
    head_variables: dict[str, keras.Variable]
    head_config: dict[str, Any]
    reads_pooler: bool


def _published(model: keras.Model, task: str | None) -> _Published:
    if isinstance(model, BertEncoder) and task in (None, ENCODER):
        return _Published(model, None, {}, {}, reads_pooler=True)
    if not isinstance(model, BertTask):
        raise ConfigError(
            f"A {type(model).__name__} is not published as task={task!r}: publish a BertEncoder "
            "or a task model (BertClassifier, BertMaskedLM, ...)."
        )
    if task == ENCODER:
        return _Published(model.encoder, None, {}, {}, reads_pooler=True)
    if task == MASKED_LM_ONLY and isinstance(model, BertPretrainer):
        head = masked_lm_head_variables(model.masked_lm_head)
        return _Published(model.encoder, MASKED_LM, head, {}, reads_pooler=False)
    if task is not None:
        raise ConfigError(
            f"A {type(model).__name__} is not published as task={task!r}: None publishes it "
            "with its head, 'encoder' its encoder, 'masked_lm' a BertPretrainer's masked LM."
        )
    return _Published(
        model.encoder,
        model.architecture_task,
        model.head_variables(),
        model.head_config(),
        reads_pooler=model.uses_pooled_output,
    )


def transformers_twin(
    model: keras.Model, task: str | None = None, packer: BertPacker | None = None
) -> TransformersTwin:
    """The transformers twin of a keras_bert model (its own head, or as `task` says).

    Args:
        model: a `BertEncoder` or a task model (`BertClassifier`, `BertMaskedLM`, ...).
        task: None for the model with its own head; "encoder" for its encoder alone;
            "masked_lm" for a `BertPretrainer`'s masked LM alone.
        packer: the preprocessor's packer, whose padding id (and the ids of its start and end
            tokens, where the family's config has them: ModernBERT's) go into the config.

    Raises:
        ConfigError: transformers has no such model: a head it lacks (mean pooling, SpanBERT's
            span-boundary head, a next-sentence head outside BERT and ALBERT), or an encoder
            setting its family's config cannot hold (keras_bert's `pre_layer_norm`, ...).

    Example:
    >>> from keras_bert import BertClassifier, BertConfig, BertEncoder
    >>> encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=100, model_type="roberta",
    ...                                         position_offset=2))
    >>> twin = transformers_twin(BertClassifier(encoder, 2, label_names=["neg", "pos"]))
    >>> twin.architecture, twin.config["id2label"], twin.pipeline_tag
    ('RobertaForSequenceClassification', {'0': 'neg', '1': 'pos'}, 'text-classification')
    >>> sorted(name for name in twin.tensors if not name.startswith("roberta."))
    ['classifier.dense.bias', 'classifier.dense.weight', 'classifier.out_proj.bias', \
'classifier.out_proj.weight']
    """
    published = _published(model, task)
    bert_config = published.encoder.bert_config
    record = family(bert_config.model_type)
    config = bert_config.to_huggingface_dict()
    pad_token_id = None if packer is None else packer.pad_id
    if pad_token_id is not None and not record.positions_after_padding:
        config["pad_token_id"] = pad_token_id
    if packer is not None:
        config |= {field: packer.cls_id for field in record.cls_id_fields}
        config |= {field: packer.sep_id for field in record.sep_id_fields}
    if pad_token_id is not None and config.get("pad_token_id") != pad_token_id:
        raise ConfigError(
            f"transformers' {record.model_type} counts positions from the padding id + 1: the "
            f"tokenizer's padding id {pad_token_id} is not {config['pad_token_id']}."
        )
    architecture = f"{record.transformers_prefix}{published.architecture_task or 'Model'}"
    config = {"architectures": [architecture], **config, **published.head_config}
    # transformers' models with a head have the pooler only where the head reads it.
    variables = {
        name: variable
        for name, variable in encoder_variables(published.encoder).items()
        if published.reads_pooler or not name.startswith(_POOLER_SCOPE)
    }
    values = {
        canonical: keras.ops.convert_to_numpy(variable).astype(np.float32)
        for canonical, variable in (variables | published.head_variables).items()
    }
    tensors = {}
    for canonical, value in join_fused_tensors(values, bert_config.model_type).items():
        name, transpose = huggingface_name(canonical, bert_config.model_type)
        if published.architecture_task is None:  # a bare model's names have no prefix
            name = name.partition(".")[2]
        tensors[name] = np.ascontiguousarray(value.T if transpose else value)
    return TransformersTwin(architecture, published.architecture_task, config, tensors)
