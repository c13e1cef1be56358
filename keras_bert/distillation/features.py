"""What a distiller reads from a task model: its logits and every layer's hidden states and
attention scores, computed by the model's own layers (weights shared, nothing copied)."""

from __future__ import annotations

import keras

from keras_bert.config import ConfigError
from keras_bert.layers import BertEmbeddings, TrailingPaddingTrim, TransformerEncoderBlock
from keras_bert.models.task import BertTask

# What a task model reads from its encoder.
ENCODER_OUTPUTS = ("sequence_output", "first_token_output", "pooled_output")
# The output of a masked LM (`BertMaskedLM`, `BertPretrainer`) that is distilled.
MASKED_LM_OUTPUT = "masked_lm"


def task_logits(outputs):
    """The logits a distiller compares: a task model's output, or a masked LM's
    `masked_lm` logits `[batch, predictions, vocabulary]` (a pretrainer's other heads are not
    distilled)."""
    return outputs[MASKED_LM_OUTPUT] if isinstance(outputs, dict) else outputs


def _identity(layer: keras.layers.Layer) -> keras.layers.Layer:
    return layer


class _WithAttentionScores(keras.layers.Layer):
    """Calls a `TransformerEncoderBlock` (its weights, not a copy) for its output and its
    attention scores. A layer of its own because Keras expects every call of one layer in a
    graph to return the structure of its first call."""

    def __init__(self, block: TransformerEncoderBlock, **kwargs):
        super().__init__(name=f"{block.name}_with_attention_scores", **kwargs)
        self.block = block

    def call(self, hidden_states, padding_mask, *relative_inputs, training=None):
        return self.block(
            hidden_states,
            padding_mask,
            *relative_inputs,  # DeBERTa's relative embeddings
            training=training,
            return_attention_scores=True,
        )

    def compute_output_spec(self, hidden_states, padding_mask, *relative_inputs, training=None):
        return self.block.compute_output_spec(
            hidden_states, padding_mask, *relative_inputs, return_attention_scores=True
        )


def encoder_features(encoder: keras.Model) -> keras.Model:
    """A functional model on the layers of `encoder` whose outputs add to the encoder's
    `embedding_output`, `hidden_states` (one per block) and `attention_scores` (one
    `[batch, heads, query, key]` per block). The encoder itself is left as it is, so its
    serving graph computes no scores."""
    embedding_output: list = []
    hidden_states: list = []
    attention_scores: list = []

    def call_and_record(layer, *args, **kwargs):
        # The last block's second call, at [CLS] for the pooler, is no layer's hidden states.
        if isinstance(layer, TransformerEncoderBlock) and not kwargs.get("first_token_only"):
            outputs, scores = _WithAttentionScores(layer)(*args, **kwargs)
            hidden_states.append(outputs)
            attention_scores.append(scores)
            return outputs
        outputs = layer(*args, **kwargs)
        if isinstance(layer, BertEmbeddings):
            embedding_output.append(outputs)
        return outputs

    traced = keras.models.clone_model(
        encoder, clone_function=_identity, call_function=call_and_record
    )
    outputs = {
        # DistilBERT and DeBERTa have no pooled output.
        **{name: traced.output[name] for name in ENCODER_OUTPUTS if name in traced.output},
        "embedding_output": embedding_output[0],
        "hidden_states": hidden_states,
        "attention_scores": attention_scores,
    }
    return keras.Model(traced.input, outputs, name=f"{encoder.name}_features")


def task_features(task: BertTask) -> keras.Model:
    """A functional model on the layers of `task` (a classifier, token classifier or masked
    LM) whose outputs are `logits` (see `task_logits`) and the encoder's outputs of
    `encoder_features`."""
    if not isinstance(task, BertTask):
        raise ConfigError(f"Can only distill a BertTask model, got {type(task).__name__}.")
    features = encoder_features(task.encoder)
    recorded: list = []

    def call_with_features(layer, *args, **kwargs):
        if isinstance(layer, TrailingPaddingTrim):
            # Every position stays: the layer-wise losses weigh them by the input mask.
            return dict(args[0])
        if layer is not task.encoder:
            return layer(*args, **kwargs)
        outputs = features(*args, **kwargs)
        recorded.append(outputs)
        return {name: outputs[name] for name in ENCODER_OUTPUTS if name in outputs}

    traced = keras.models.clone_model(
        task, clone_function=_identity, call_function=call_with_features
    )
    if len(recorded) != 1:
        raise ConfigError(f"{task.name} calls its encoder {len(recorded)} times, not once.")
    outputs = {"logits": task_logits(traced.output), **recorded[0]}
    return keras.Model(traced.input, outputs, name=f"{task.name}_features")
