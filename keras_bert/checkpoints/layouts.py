"""The layouts of a Hugging Face checkpoint: a bare model's tensor names and those no model reads.

`AutoModel.save_pretrained` (`BertModel`, `AlbertModel`, ...) writes the encoder's tensors
without the prefix that `*ForMaskedLM`, `*ForPreTraining` and `*ForSequenceClassification` put
before them (`bert.`, `albert.`, ...). Read with the prefix added, every layout gives the same
canonical names. The task heads' tensors keep their module paths (`keras_bert.checkpoints.
task_heads`); tensors of modules no keras_bert model has (TinyBERT's `fit_denses`) end outside
the canonical scopes and are reported as ignored.
"""

from __future__ import annotations

from keras_bert.checkpoints.task_heads import HEAD_SCOPES
from keras_bert.families import family

# The top-level modules of the bare models of every family (DistilBERT's blocks sit under
# `transformer.`, ModernBERT's under `layers.` with a `final_norm.`, ELECTRA's embedding
# projection is `embeddings_project.`; a `pooler.` is the bare model's only in families whose
# encoder has one: in DeBERTa's it is the classifier's context pooler).
_BARE_MODEL_MODULES = (
    "embeddings.",
    "embeddings_project.",
    "encoder.",
    "transformer.",
    "layers.",
    "final_norm.",
)
_POOLER_MODULE = "pooler."
# Canonical names of the tensors keras_bert's models read: the encoder, the pretraining heads
# and the task heads.
_READ_SCOPES = ("bert/", "cls/", *HEAD_SCOPES)


def with_model_prefix(name: str, model_type: str = "bert") -> str:
    """`name` under the prefix of Hugging Face's `BertModel` if it is a bare model's tensor.

    Every family's own prefix (`albert.`, `roberta.`, ...) is rewritten to `bert.` by its name
    rules, so a bare name takes `bert.` directly.

    Example:
    >>> with_model_prefix("pooler.weight")
    'bert.pooler.weight'
    >>> with_model_prefix("albert.pooler.weight"), with_model_prefix("pooler.dense.weight",
    ...     "deberta-v2")
    ('albert.pooler.weight', 'pooler.dense.weight')
    """
    modules = _BARE_MODEL_MODULES
    if family(model_type).pooler:
        modules += (_POOLER_MODULE,)
    return f"bert.{name}" if name.startswith(modules) else name


def is_read_by_models(canonical_name: str) -> bool:
    """Whether a canonical tensor name belongs to the encoder, a pretraining head or a task head.

    Example:
    >>> is_read_by_models("bert/pooler/dense/kernel"), is_read_by_models("fit_denses/0/kernel")
    (True, False)
    """
    return canonical_name.startswith(_READ_SCOPES)
