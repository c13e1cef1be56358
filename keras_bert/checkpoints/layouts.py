"""The layouts of a Hugging Face checkpoint: a bare model's tensor names and those no model reads.

`AutoModel.save_pretrained` (`BertModel`, `AlbertModel`, ...) writes the encoder's tensors
without the prefix that `*ForMaskedLM`, `*ForPreTraining` and `*ForSequenceClassification` put
before them (`bert.`, `albert.`, ...). Read with the prefix added, every layout gives the same
canonical names. Heads no keras_bert model has (a sequence classifier, TinyBERT's `fit_denses`)
end outside the canonical scopes and are reported as ignored.
"""

from __future__ import annotations

# The top-level modules of the bare models of every family (DistilBERT's blocks sit under
# `transformer.`).
_BARE_MODEL_MODULES = ("embeddings.", "encoder.", "pooler.", "transformer.")
# Canonical names of the tensors keras_bert's models read: the encoder and the pretraining heads.
_READ_SCOPES = ("bert/", "cls/")


def with_model_prefix(name: str) -> str:
    """`name` under the prefix of Hugging Face's `BertModel` if it is a bare model's tensor.

    Every family's own prefix (`albert.`, `roberta.`, ...) is rewritten to `bert.` by its name
    rules, so a bare name takes `bert.` directly.

    Example:
    >>> with_model_prefix("pooler.weight")
    'bert.pooler.weight'
    >>> with_model_prefix("albert.pooler.weight")
    'albert.pooler.weight'
    """
    return f"bert.{name}" if name.startswith(_BARE_MODEL_MODULES) else name


def is_read_by_models(canonical_name: str) -> bool:
    """Whether a canonical tensor name belongs to the encoder or a pretraining head.

    Example:
    >>> is_read_by_models("bert/pooler/dense/kernel"), is_read_by_models("fit_denses/0/kernel")
    (True, False)
    """
    return canonical_name.startswith(_READ_SCOPES)
