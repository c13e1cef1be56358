"""The distillation losses: soft and hard targets (DistilBERT) and layer-wise losses (TinyBERT).

Each takes teacher and student tensors (any float dtype; computed in float32) and returns a
scalar. `mask` arguments are 1 for positions that count and 0 for those that do not (padding).
"""

from __future__ import annotations

from keras import ops

from keras_bert.models.token_classifier import IGNORED_LABEL


def masked_mean(values, mask=None):
    """The mean of `values` over the positions where `mask` (broadcast to them) is 1."""
    if mask is None:
        return ops.mean(values)
    mask = ops.broadcast_to(ops.cast(mask, "float32"), ops.shape(values))
    return ops.sum(values * mask) / ops.maximum(ops.sum(mask), 1.0)


def soft_target_loss(teacher_logits, student_logits, temperature: float, mask=None):
    """KL(teacher || student) of the distributions at `temperature`, times `temperature**2`
    (so that its gradients keep their scale as the temperature changes; Hinton et al. 2015).

    Args:
        teacher_logits: `[..., classes]` (class or vocabulary logits).
        student_logits: the student's logits of the same shape.
        temperature: softens both distributions (> 0).
        mask: `[...]`, which positions count (e.g. the input mask for per-token logits).
    """
    teacher_logits = ops.cast(teacher_logits, "float32") / temperature
    student_logits = ops.cast(student_logits, "float32") / temperature
    teacher_log_probabilities = ops.log_softmax(teacher_logits, axis=-1)
    divergence = ops.sum(
        ops.exp(teacher_log_probabilities)
        * (teacher_log_probabilities - ops.log_softmax(student_logits, axis=-1)),
        axis=-1,
    )
    return masked_mean(divergence, mask) * temperature**2


def hard_target_loss(labels, student_logits):
    """Cross-entropy with the true labels, averaged over the labels that are not
    `IGNORED_LABEL` (padding, later word pieces, unlabeled text); 0 if there are none."""
    labels = ops.cast(labels, "int32")
    labelled = ops.not_equal(labels, IGNORED_LABEL)
    log_probabilities = ops.log_softmax(ops.cast(student_logits, "float32"), axis=-1)
    label_log_probabilities = ops.take_along_axis(
        log_probabilities, ops.expand_dims(ops.where(labelled, labels, 0), -1), axis=-1
    )
    return masked_mean(-ops.squeeze(label_log_probabilities, -1), labelled)


def hidden_cosine_loss(teacher_hidden, student_hidden, mask):
    """DistilBERT's cosine loss: `1 - cos(teacher, student)` of the hidden vectors, averaged
    over real tokens (`mask` `[batch, sequence]`)."""
    teacher_hidden = ops.cast(teacher_hidden, "float32")
    student_hidden = ops.cast(student_hidden, "float32")
    cosine = ops.sum(teacher_hidden * student_hidden, axis=-1) / ops.maximum(
        ops.norm(teacher_hidden, axis=-1) * ops.norm(student_hidden, axis=-1), 1e-12
    )
    return masked_mean(1.0 - cosine, mask)


def hidden_mse_loss(teacher_hidden, student_hidden, mask):
    """TinyBERT's hidden-state loss: the mean squared error over the features of real tokens
    (`mask` `[batch, sequence]`); a student of another width comes through a projection first."""
    difference = ops.cast(teacher_hidden, "float32") - ops.cast(student_hidden, "float32")
    return masked_mean(ops.square(difference), ops.expand_dims(mask, -1))


def attention_score_loss(teacher_scores, student_scores, mask):
    """TinyBERT's attention loss: the mean squared error of the attention scores
    `[batch, heads, query, key]` (before the padding mask and softmax) over the pairs of real
    tokens (`mask` `[batch, sequence]`)."""
    mask = ops.cast(mask, "float32")
    pairs = mask[:, None, :, None] * mask[:, None, None, :]
    difference = ops.cast(teacher_scores, "float32") - ops.cast(student_scores, "float32")
    return masked_mean(ops.square(difference), pairs)
