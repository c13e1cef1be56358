"""The task heads of a Hugging Face checkpoint: the architecture that holds each, the modules of
its dense layers, and its labels (`id2label`).

transformers names a fine-tuned model's architecture `<family prefix><task>`
(`RobertaForSequenceClassification`); its head's tensors sit beside the encoder's under the
head's module names: a family's own for sequence classification (`classifier.dense` and
`classifier.out_proj` for RoBERTa, `pre_classifier` and `classifier` for DistilBERT, ...: its
record's `classifier_head`), `classifier` for token classification and `qa_outputs` for question
answering (ModernBERT's `classifier`, after its prediction head `head`). Their canonical names
are those module paths (`classifier/out_proj/kernel`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from keras_bert.families import FAMILIES

SEQUENCE_CLASSIFICATION = "ForSequenceClassification"
TOKEN_CLASSIFICATION = "ForTokenClassification"
QUESTION_ANSWERING = "ForQuestionAnswering"
MASKED_LM = "ForMaskedLM"
PRETRAINING = "ForPreTraining"
# The modules of the heads every family names alike.
TOKEN_CLASSIFIER_MODULE = "classifier"
# The canonical scopes of every family's task heads (`pooler/`: DeBERTa's context pooler).
HEAD_SCOPES = tuple(
    sorted(
        {
            f"{module.split('.')[0]}/"
            for record in FAMILIES.values()
            for module in (
                record.classifier_head.dense_module,
                record.classifier_head.output_module,
                TOKEN_CLASSIFIER_MODULE,
                record.question_answering_module,
            )
            if module is not None
        }
    )
)


def architecture_task(config_values: Mapping[str, Any]) -> str | None:
    """The task of the architecture a `config.json` names (`ForSequenceClassification`,
    `ForMaskedLM`, ...); None for a bare model or none named.

    Example:
    >>> architecture_task({"architectures": ["DebertaV2ForTokenClassification"]})
    'ForTokenClassification'
    >>> architecture_task({"architectures": ["BertModel"]}) is None
    True
    """
    architectures = config_values.get("architectures") or [""]
    _, found, task = architectures[0].partition("For")
    return f"For{task}" if found else None


def label_names(config_values: Mapping[str, Any]) -> list[str] | None:
    """The label names of a `config.json` (its `id2label`, by id); None without one.

    Example:
    >>> label_names({"id2label": {"1": "pos", "0": "neg"}})
    ['neg', 'pos']
    """
    id2label = config_values.get("id2label")
    if not id2label:
        return None
    return [id2label[key] for key in sorted(id2label, key=int)]


def label_config(names: Sequence[str]) -> dict[str, dict]:
    """`id2label` and `label2id` of a `config.json` for labels named `names`, in id order.

    Example:
    >>> label_config(["neg", "pos"])
    {'id2label': {'0': 'neg', '1': 'pos'}, 'label2id': {'neg': 0, 'pos': 1}}
    """
    return {
        "id2label": {str(index): name for index, name in enumerate(names)},
        "label2id": {name: index for index, name in enumerate(names)},
    }
