"""Hugging Face's `Trainer` as a plain torch loop on 2 threads: its defaults, its batches.

`transformers.Trainer` needs `accelerate`, which the `peer` extra does not install; the loop
below does what `Trainer.train` does with its defaults (transformers 5.23, one CPU process):
`set_seed(seed)` again once the model is built (as `Trainer.__init__` does), a `DataLoader`
over a `RandomSampler` (a new order every epoch, drawn from torch's global generator; under
`Trainer`, accelerate's `SeedableRandomSampler` draws other orders of the same kind), the
whole last batch kept, AdamW (`adamw_torch_fused`, betas 0.9/0.999, eps 1e-8; weight decay
not on biases and LayerNorm weights), a linear schedule to 0 after `warmup_steps`, gradients
clipped at norm 1.0, `ceil(epochs * batches per epoch)` steps. What `Trainer` adds around
training (a checkpoint saved every 500 steps, logging every 500) is left out: it is not
training. Evaluation predicts with `Trainer`'s `per_device_eval_batch_size` of 8, in order.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence

import numpy as np

TORCH_THREADS = 2


@dataclasses.dataclass(frozen=True)
class TrainerRecipe:
    """The settings of a Hugging Face example script's run: the flags its README passes, and
    `TrainingArguments`' defaults for the rest.

    Args:
        learning_rate: `--learning_rate`.
        batch_size: `--per_device_train_batch_size` (one device).
        epochs: `--num_train_epochs`.
        weight_decay: `TrainingArguments.weight_decay` (0).
        warmup_steps: `TrainingArguments.warmup_steps` (0).
        max_grad_norm: `TrainingArguments.max_grad_norm` (1.0).
        adam_epsilon: `TrainingArguments.adam_epsilon` (1e-8).
        eval_batch_size: `TrainingArguments.per_device_eval_batch_size` (8).
    """

    learning_rate: float
    batch_size: int
    epochs: int
    weight_decay: float = 0.0
    warmup_steps: int = 0
    max_grad_norm: float = 1.0
    adam_epsilon: float = 1e-8
    eval_batch_size: int = 8


def hugging_face_optimizer(
    model,
    total_steps: int,
    learning_rate: float = 5e-5,
    weight_decay: float = 0.01,
    warmup_steps: int | None = None,
    adam_epsilon: float = 1e-8,
    fused: bool = False,
):
    """AdamW with weight decay except on biases and LayerNorm weights, and a linear warm-up
    then linear decay to 0, as (optimizer, schedule). The defaults are BERT's fine-tuning recipe
    (5e-5, decay 0.01, 10% warm-up); `Trainer`'s are `weight_decay=0, warmup_steps=0,
    fused=True`."""
    import torch
    import transformers

    no_decay = ("bias", "LayerNorm.weight")
    parameters = list(model.named_parameters())
    groups = [
        {"params": [p for n, p in parameters if not any(s in n for s in no_decay)]},
        {"params": [p for n, p in parameters if any(s in n for s in no_decay)], "weight_decay": 0},
    ]
    optimizer = torch.optim.AdamW(
        groups, lr=learning_rate, weight_decay=weight_decay, eps=adam_epsilon, fused=fused
    )
    if warmup_steps is None:
        warmup_steps = round(0.1 * total_steps)
    schedule = transformers.get_linear_schedule_with_warmup(optimizer, warmup_steps, total_steps)
    return optimizer, schedule


def hugging_face_step(model, batch: dict, optimizer, schedule, max_grad_norm: float = 1.0) -> float:
    """One training step (gradients clipped at `max_grad_norm`); returns the batch's loss."""
    import torch

    loss = model(**batch).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    schedule.step()
    optimizer.zero_grad()
    return loss.item()


@dataclasses.dataclass
class TrainingRun:
    """What a training loop did: its seconds, the sequences it trained on (features x
    epochs), its steps, each epoch's mean loss and each epoch's seconds."""

    seconds: float
    sequences: int
    steps: int
    epoch_losses: list[float]
    epoch_seconds: list[float]


def train_like_trainer(
    model,
    features: Sequence[dict],
    collator: Callable[[list[dict]], dict],
    recipe: TrainerRecipe,
    seed: int,
) -> TrainingRun:
    """Trains `model` on `features` (one dict of model inputs and labels per sequence, batched
    by `collator`) as `Trainer.train` does with `recipe`; prints a line per epoch."""
    import torch
    import transformers

    transformers.set_seed(seed)
    loader = torch.utils.data.DataLoader(
        features,
        batch_size=recipe.batch_size,
        sampler=torch.utils.data.RandomSampler(features),
        collate_fn=collator,
    )
    total_steps = math.ceil(recipe.epochs * len(loader))
    optimizer, schedule = hugging_face_optimizer(
        model,
        total_steps,
        recipe.learning_rate,
        recipe.weight_decay,
        recipe.warmup_steps,
        recipe.adam_epsilon,
        fused=True,
    )
    model.train()
    model.zero_grad()
    epoch_losses, epoch_seconds, steps = [], [], 0
    started = time.perf_counter()
    for epoch in range(recipe.epochs):
        losses, epoch_started = [], time.perf_counter()
        for batch in loader:
            loss = hugging_face_step(model, batch, optimizer, schedule, recipe.max_grad_norm)
            losses.append(loss)
            steps += 1
        epoch_losses.append(float(np.mean(losses)))
        epoch_seconds.append(round(time.perf_counter() - epoch_started, 1))
        print(
            f"epoch {epoch + 1}/{recipe.epochs}: loss {epoch_losses[-1]:.4f}, "
            f"{time.perf_counter() - started:.0f} s",
            flush=True,
        )
    seconds = time.perf_counter() - started
    return TrainingRun(seconds, len(features) * recipe.epochs, steps, epoch_losses, epoch_seconds)


def predict_like_trainer(
    model,
    features: Sequence[dict],
    collator: Callable[[list[dict]], dict],
    batch_size: int = 8,
    outputs: Sequence[str] = ("logits",),
) -> list[list[np.ndarray]]:
    """The model's `outputs` for every feature, in order: for each output name, one array per
    batch (batches of `batch_size`, as `Trainer.predict`; labels are not passed)."""
    import torch

    model.eval()
    results = [[] for _ in outputs]
    with torch.no_grad():
        for start in range(0, len(features), batch_size):
            batch = collator(list(features[start : start + batch_size]))
            for name in ("labels", "start_positions", "end_positions"):
                batch.pop(name, None)
            prediction = model(**batch)
            for result, name in zip(results, outputs, strict=True):
                result.append(getattr(prediction, name).numpy())
    return results
