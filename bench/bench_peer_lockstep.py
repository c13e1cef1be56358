"""Token classification in lockstep: Hugging Face and keras_bert from identical weights on
identical batches, their losses side by side at every step, then both F1 scores.

Both models start from the same MiniLM-L6 checkpoint and, unless `--head-draw` says otherwise,
the same head (Hugging Face's initial draw copied into ours). Every step, the same batch
(Hugging Face's, or keras_bert's tf.data batches with `--batches keras_bert`) trains both with
the same recipe (AdamW 5e-5, weight decay 0.01, 10% warm-up then linear decay, clipping at
norm 1.0). Without dropout the two losses should agree to a few digits over the whole run; with
dropout, their epoch means. This comparison found issue 17's cause (BENCHMARKS.md): with
everything else equal, the head's initial draw decided WNUT-16's F1. Needs the extra `peer`.

    python -m bench.bench_peer_lockstep --dropout 0.1
    python -m bench.bench_peer_lockstep --sides keras_bert --head-draw truncated:1
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from bench.bench_peer_finetuning import (
    encode_for_hugging_face,
    hugging_face_batches,
    hugging_face_scores,
    read_task,
)
from bench.peer_trainer import TORCH_THREADS, hugging_face_optimizer, hugging_face_step

HEAD_DRAWS = ("hugging_face", "keras", "normal:SEED", "truncated:SEED")


def head_kernel(draw: str, shape: tuple[int, int], spread: float) -> np.ndarray:
    """A head kernel drawn as `draw` says: "normal:SEED" or "truncated:SEED" (at 2 std)."""
    kind, seed = draw.split(":")
    rng = np.random.default_rng(int(seed))
    kernel = rng.normal(0.0, spread, shape)
    while kind == "truncated" and (outside := np.abs(kernel) > 2 * spread).any():
        kernel[outside] = rng.normal(0.0, spread, outside.sum())
    return kernel.astype("float32")


def keras_bert_batches(train, preprocessor, label_names, seed: int):
    """keras_bert's shuffled training batches, as the torch tensors Hugging Face takes."""
    import torch

    from keras_bert.data.token_classification import encode_tags, token_classification_dataset

    dataset = token_classification_dataset(
        train, preprocessor, encode_tags(train, label_names), 32, shuffle=True, seed=seed
    )
    for inputs, labels in dataset.repeat():
        yield {
            "input_ids": torch.tensor(inputs["input_word_ids"].numpy()),
            "attention_mask": torch.tensor(inputs["input_mask"].numpy()),
            "token_type_ids": torch.tensor(inputs["input_type_ids"].numpy()),
            "labels": torch.tensor(labels.numpy()).long(),
        }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--sides", default="hugging_face,keras_bert")
    parser.add_argument("--batches", choices=("hugging_face", "keras_bert"), default="hugging_face")
    parser.add_argument("--head-draw", default="hugging_face", help=", ".join(HEAD_DRAWS))
    args = parser.parse_args(argv)
    sides = args.sides.split(",")

    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    import transformers

    from keras_bert.finetuning.token_classification import evaluate_token_classifier
    from keras_bert.loading import load_preprocessor
    from keras_bert.models import BertEncoder, BertTokenClassifier
    from keras_bert.training import create_optimizer
    from pipelines.common import default_checkpoint

    torch.set_num_threads(TORCH_THREADS)
    transformers.set_seed(args.seed)
    checkpoint = default_checkpoint()
    train, evaluation, label_names = read_task("wnut16")
    tokenizer = transformers.BertTokenizerFast.from_pretrained(checkpoint)
    preprocessor = load_preprocessor(checkpoint, seq_length=128)
    dropout = {"hidden_dropout_prob": args.dropout, "attention_probs_dropout_prob": args.dropout}
    hugging_face = transformers.BertForTokenClassification.from_pretrained(
        checkpoint, num_labels=len(label_names), **dropout
    )
    encoder = BertEncoder.from_checkpoint(
        checkpoint, dropout_rate=args.dropout, attention_dropout_rate=args.dropout
    )
    ours = BertTokenClassifier(encoder, label_names, dropout_rate=args.dropout)
    head = ours.get_layer("token_logits")
    if args.head_draw == "hugging_face":
        head.kernel.assign(hugging_face.classifier.weight.detach().numpy().T)
    elif args.head_draw != "keras":
        spread = encoder.bert_config.initializer_range
        head.kernel.assign(head_kernel(args.head_draw, tuple(head.kernel.shape), spread))

    features = encode_for_hugging_face("wnut16", tokenizer, train, label_names, 128)
    steps_per_epoch = -(-len(features) // 32)
    total_steps = args.epochs * steps_per_epoch
    ours.compile(optimizer=create_optimizer(5e-5, total_steps=total_steps))
    optimizer, schedule = hugging_face_optimizer(hugging_face, total_steps)
    if args.batches == "hugging_face":
        batches = hugging_face_batches(features, 32, args.seed, args.epochs)
    else:
        batches = keras_bert_batches(train, preprocessor, label_names, args.seed)

    hugging_face.train()
    sums = {side: 0.0 for side in sides}
    for step, batch in zip(range(total_steps), batches, strict=False):
        losses = {}
        if "hugging_face" in sides:
            losses["hugging_face"] = hugging_face_step(hugging_face, batch, optimizer, schedule)
        if "keras_bert" in sides:
            inputs = {
                "input_word_ids": batch["input_ids"].numpy(),
                "input_mask": batch["attention_mask"].numpy(),
                "input_type_ids": batch["token_type_ids"].numpy(),
            }
            result = ours.train_on_batch(inputs, batch["labels"].numpy(), return_dict=True)
            losses["keras_bert"] = float(result["loss"])
        print(f"step {step}: " + ", ".join(f"{s} {v:.5f}" for s, v in losses.items()), flush=True)
        for side, value in losses.items():
            sums[side] += value
        if (step + 1) % steps_per_epoch == 0:
            means = ", ".join(f"{s} {v / steps_per_epoch:.4f}" for s, v in sums.items())
            print(f"epoch {(step + 1) // steps_per_epoch} mean loss: {means}", flush=True)
            sums = dict.fromkeys(sums, 0.0)
    if "hugging_face" in sides:
        scores = hugging_face_scores(
            "wnut16", hugging_face, tokenizer, evaluation, label_names, 128
        )
        print("hugging_face F1", scores["f1"])
    if "keras_bert" in sides:
        print("keras_bert F1", evaluate_token_classifier(ours, preprocessor, evaluation)["f1"])


if __name__ == "__main__":
    main()
