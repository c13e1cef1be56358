"""The model card (`README.md`) of a published model: the Hub's metadata, then what the model
is, its labels, its data, its measured metrics and how to load it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from huggingface_hub import ModelCardData

from keras_bert.checkpoints.hub import is_hub_id
from keras_bert.checkpoints.task_heads import (
    MASKED_LM,
    PRETRAINING,
    QUESTION_ANSWERING,
    SEQUENCE_CLASSIFICATION,
    TOKEN_CLASSIFICATION,
)
from keras_bert.publishing.transformers_twin import TransformersTwin

# The transformers Auto class and the keras_bert model of each architecture task.
_LOADERS = {
    None: ("AutoModel", "BertEncoder"),
    MASKED_LM: ("AutoModelForMaskedLM", "BertMaskedLM"),
    PRETRAINING: ("AutoModelForPreTraining", "BertPretrainer"),
    SEQUENCE_CLASSIFICATION: ("AutoModelForSequenceClassification", "BertClassifier"),
    TOKEN_CLASSIFICATION: ("AutoModelForTokenClassification", "BertTokenClassifier"),
    QUESTION_ANSWERING: ("AutoModelForQuestionAnswering", "BertQuestionAnswerer"),
}


def metric_rows(metrics: Mapping[str, Any], prefix: str = "") -> list[tuple[str, float]]:
    """The numbers of a `metrics.json` summary's `evaluation` (or of the whole summary without
    it), nested names joined by dots; training histories are left out.

    Example:
    >>> metric_rows({"train_steps": 10, "evaluation": {"dev": {"accuracy": 0.9}}})
    [('dev.accuracy', 0.9)]
    """
    if not prefix and isinstance(metrics.get("evaluation"), Mapping):
        metrics = metrics["evaluation"]
    rows = []
    for name, value in metrics.items():
        if isinstance(value, Mapping) and name != "history":
            rows += metric_rows(value, f"{prefix}{name}.")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            rows.append((f"{prefix}{name}", value))
    return rows


def base_model_id(base_model: str | None) -> str | None:
    """The Hub id of a base checkpoint for the card's metadata: an `org/name` id (a bare `name`
    may be a local folder's as well as a legacy Hub id, which the Hub's metadata does not take).

    Example:
    >>> base_model_id("google-bert/bert-base-uncased"), base_model_id("minilm")
    ('google-bert/bert-base-uncased', None)
    """
    if base_model and "/" in base_model and is_hub_id(base_model):
        return base_model
    return None


def _described(base_model: str | None) -> str:
    """The base checkpoint as the card names it: a local path by its last two parts only."""
    if base_model is None:
        return "none (trained from scratch)"
    if base_model_id(base_model) is not None:
        return f"`{base_model}`"
    path = Path(base_model)
    return f"a local checkpoint, `{path.parent.name}/{path.name}`"


def model_card(
    twin: TransformersTwin,
    name: str,
    base_model: str | None = None,
    dataset: str | None = None,
    metrics: Mapping[str, Any] | None = None,
) -> str:
    """The `README.md` of a published model.

    Args:
        twin: the model as transformers sees it (architecture, config, task).
        name: what to call it: its Hub id, or its directory's name.
        base_model: the checkpoint it was trained from; an `org/name` Hub id also goes into the
            metadata.
        dataset: what it was trained on, in words or as a path or Hub id.
        metrics: its `metrics.json` summary, whose evaluation scores are listed.

    Example:
    >>> from keras_bert.publishing.transformers_twin import TransformersTwin
    >>> twin = TransformersTwin("BertForSequenceClassification", "ForSequenceClassification",
    ...                         {"id2label": {"0": "neg", "1": "pos"}}, {})
    >>> card = model_card(twin, "org/sentiment", "google-bert/bert-base-uncased")
    >>> print(card[:card.index("# ")].strip())
    ---
    base_model: google-bert/bert-base-uncased
    library_name: transformers
    pipeline_tag: text-classification
    tags:
    - keras-bert
    ---
    """
    metadata = ModelCardData(
        library_name="transformers",
        pipeline_tag=twin.pipeline_tag,
        base_model=base_model_id(base_model),
        tags=["keras-bert"],
    )
    auto_class, keras_class = _LOADERS[twin.task]
    sections = [
        f"---\n{metadata.to_yaml()}\n---\n",
        f"# {name}\n",
        f"A `{twin.architecture}` trained with keras_bert (TensorFlow, Keras 3) and saved in "
        "Hugging Face's layout: transformers, `tokenizers` and keras_bert load it as it is.\n",
        f"- Base checkpoint: {_described(base_model)}",
        f"- Task: {twin.pipeline_tag}",
        f"- Data: {dataset or 'not stated'}\n",
    ]
    labels = twin.config.get("id2label")
    if labels and twin.config.get("problem_type") != "regression":
        rows = "".join(f"| {index} | {label} |\n" for index, label in labels.items())
        sections.append(f"## Labels\n\n| id | label |\n|---|---|\n{rows}")
    scores = metric_rows(metrics or {})
    if scores:
        rows = "".join(f"| {metric} | {value:.4g} |\n" for metric, value in scores)
        sections.append(
            "## Metrics\n\nMeasured after training (`metrics.json`):\n\n"
            f"| metric | value |\n|---|---:|\n{rows}"
        )
    sections.append(
        "## Use\n\nWith transformers:\n\n```python\n"
        f"from transformers import AutoTokenizer, {auto_class}\n\n"
        f'tokenizer = AutoTokenizer.from_pretrained("{name}")\n'
        f'model = {auto_class}.from_pretrained("{name}")\n'
        "```\n\nWith keras_bert:\n\n```python\n"
        f"from keras_bert import {keras_class}\n\n"
        f'model = {keras_class}.from_checkpoint("{name}")\n'
        "```\n"
    )
    return "\n".join(sections)
