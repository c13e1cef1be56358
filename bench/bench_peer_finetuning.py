"""Fine-tuning quality and speed: keras_bert vs Hugging Face PyTorch, same data, budget, seeds.

Both sides fine-tune the real MiniLM-L6 checkpoint (Hugging Face loads it from the same local
directory, offline) with the BERT recipe: AdamW 5e-5, weight decay 0.01 except biases and
LayerNorm, 10% linear warm-up then linear decay to 0, gradient clipping at norm 1.0, dropout
0.1, each batch padded to its longest sequence (keras_bert's sentence classification batches
texts of similar length, its default `length_bucketing`). Token classification labels the first word
piece of each word (-100 elsewhere) and predicts a word's tag from its first piece. Both sides'
predictions are scored with `keras_bert.metrics`. Every run is its own subprocess; torch uses
2 threads. Needs the optional extra `peer` (torch, transformers).

    python -m bench.bench_peer_finetuning --tasks wnut16 --seeds 0,1,2 --epochs 5 \\
        --seq-length 128

Tasks: `wnut16` (entity F1 on `wnut16.dev.jsonl`) and `sentiment` (accuracy on
`movie_snippets.dev.jsonl`). Sequences/s count the sequences trained (epochs x examples) over
the seconds of the training loop (model loading and evaluation excluded); the CPU seconds of
each whole run (loading, training, evaluation) are less disturbed by other jobs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

DATA = {
    "wnut16": ("../shared/data/ner/wnut16.train.jsonl", "../shared/data/ner/wnut16.dev.jsonl"),
    "sentiment": (
        "../shared/data/sentiment/movie_snippets.train.jsonl",
        "../shared/data/sentiment/movie_snippets.dev.jsonl",
    ),
}
SIDES = ("keras_bert", "hugging_face")
TORCH_THREADS = 2


def read_task(task: str):
    """(train, evaluation) examples of a task as keras_bert's readers return them, and the
    label names (from all the training data, so that a sample of it has the same ones)."""
    from keras_bert.data.classification import read_classification_file
    from keras_bert.data.token_classification import read_tagged_jsonl, tag_names_of

    read = read_tagged_jsonl if task == "wnut16" else read_classification_file
    train, evaluation = (read(path) for path in DATA[task])
    label_names = tag_names_of(train) if task == "wnut16" else sorted(set(train.labels))
    return train, evaluation, label_names


def run_keras_bert(task: str, args: argparse.Namespace) -> dict:
    """Trains and evaluates with the fine-tuning recipes that the pipelines call."""
    from keras_bert.finetuning.classification import finetune_classifier
    from keras_bert.finetuning.recipe import FinetuningConfig
    from keras_bert.finetuning.token_classification import finetune_token_classifier
    from pipelines.common import default_checkpoint

    train, evaluation, label_names = read_task(task)
    config = FinetuningConfig(
        checkpoint=default_checkpoint(),
        output_dir=tempfile.mkdtemp(prefix=f"peer_{task}_"),
        seq_length=args.seq_length,
        batch_size=args.batch_size,
        epochs=args.epochs,
        run={"seed": args.seed},
        max_train_examples=args.max_train_examples,
    )
    if task == "wnut16":
        _, summary = finetune_token_classifier(config, train, evaluation, tag_names=label_names)
    else:
        _, summary = finetune_classifier(config, train, evaluation, label_names=label_names)
    return {"train_seconds": summary["train_seconds"], "evaluation": summary["evaluation"]}


def hugging_face_batches(encoded: list[dict], batch_size: int, seed: int, epochs: int):
    """Shuffled batches each epoch, padded to their longest sequence (labels with -100)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        order = torch.randperm(len(encoded), generator=generator).tolist()
        for start in range(0, len(order), batch_size):
            yield pad_batch([encoded[index] for index in order[start : start + batch_size]])


def pad_batch(features: list[dict]) -> dict:
    import torch

    length = max(len(feature["input_ids"]) for feature in features)
    batch = {}
    for name, padding in (("input_ids", 0), ("attention_mask", 0), ("token_type_ids", 0)):
        batch[name] = torch.tensor(
            [feature[name] + [padding] * (length - len(feature[name])) for feature in features]
        )
    labels = [feature["labels"] for feature in features]
    if isinstance(labels[0], list):
        labels = [label + [-100] * (length - len(label)) for label in labels]
    batch["labels"] = torch.tensor(labels)
    return batch


def encode_for_hugging_face(task: str, tokenizer, examples, label_names, seq_length: int):
    """Token ids and labels: the first piece of each word labelled, -100 elsewhere."""
    if task == "sentiment":
        encoded = tokenizer(examples.texts, truncation=True, max_length=seq_length)
        return [
            {**{name: encoded[name][index] for name in encoded}, "labels": label_names.index(label)}
            for index, label in enumerate(examples.labels)
        ]
    encoded = tokenizer(
        examples.words, is_split_into_words=True, truncation=True, max_length=seq_length
    )
    features = []
    for index, tags in enumerate(examples.tags):
        labels, previous_word = [], None
        for word in encoded.word_ids(index):
            first_piece = word is not None and word != previous_word
            labels.append(label_names.index(tags[word]) if first_piece else -100)
            previous_word = word
        features.append({**{name: encoded[name][index] for name in encoded}, "labels": labels})
    return features


def hugging_face_optimizer(model, total_steps: int):
    """AdamW 5e-5 with weight decay 0.01 (not biases and LayerNorm), 10% linear warm-up then
    linear decay to 0: Hugging Face's fine-tuning recipe, as (optimizer, schedule)."""
    import torch
    import transformers

    no_decay = ("bias", "LayerNorm.weight")
    parameters = list(model.named_parameters())
    groups = [
        {"params": [p for n, p in parameters if not any(s in n for s in no_decay)]},
        {"params": [p for n, p in parameters if any(s in n for s in no_decay)], "weight_decay": 0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=5e-5, weight_decay=0.01)
    schedule = transformers.get_linear_schedule_with_warmup(
        optimizer, round(0.1 * total_steps), total_steps
    )
    return optimizer, schedule


def hugging_face_step(model, batch: dict, optimizer, schedule) -> float:
    """One training step (clipping at norm 1.0); returns the batch's loss."""
    import torch

    loss = model(**batch).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    schedule.step()
    optimizer.zero_grad()
    return loss.item()


def hugging_face_scores(task: str, model, tokenizer, evaluation, label_names, seq_length) -> dict:
    """The model's evaluation scores from `keras_bert.metrics` (word tags from first pieces)."""
    import torch

    from keras_bert.metrics import classification_scores, entity_scores

    model.eval()
    eval_features = encode_for_hugging_face(task, tokenizer, evaluation, label_names, seq_length)
    predictions = []
    with torch.no_grad():
        for start in range(0, len(eval_features), 64):
            batch = pad_batch(eval_features[start : start + 64])
            labels = batch.pop("labels")
            logits = model(**batch).logits.argmax(-1)
            if task == "sentiment":
                predictions.extend(logits.tolist())
                continue
            for sentence_ids, sentence_labels in zip(logits, labels, strict=True):
                predictions.append(sentence_ids[sentence_labels != -100].tolist())
    if task == "sentiment":
        labels = [label_names.index(label) for label in evaluation.labels]
        return classification_scores(
            np.asarray(labels), np.asarray(predictions), num_classes=len(label_names)
        )
    # Words cut off by truncation have no piece: they count as "O", as in keras_bert.
    predicted_tags = [
        [label_names[i] for i in ids] + ["O"] * (len(words) - len(ids))
        for ids, words in zip(predictions, evaluation.words, strict=True)
    ]
    return entity_scores(evaluation.tags, predicted_tags)


def run_hugging_face(task: str, args: argparse.Namespace) -> dict:
    """The same recipe written as a Hugging Face user writes it (BertFor...; torch AdamW)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    import transformers

    from pipelines.common import default_checkpoint

    torch.set_num_threads(TORCH_THREADS)
    transformers.set_seed(args.seed)
    train, evaluation, label_names = read_task(task)
    if args.max_train_examples:
        train = train.sample(args.max_train_examples, seed=args.seed)
    model_class = (
        transformers.BertForTokenClassification
        if task == "wnut16"
        else transformers.BertForSequenceClassification
    )
    model = model_class.from_pretrained(default_checkpoint(), num_labels=len(label_names))
    tokenizer = transformers.BertTokenizerFast.from_pretrained(default_checkpoint())
    train_features = encode_for_hugging_face(task, tokenizer, train, label_names, args.seq_length)
    steps = args.epochs * -(-len(train_features) // args.batch_size)
    optimizer, schedule = hugging_face_optimizer(model, steps)

    model.train()
    started = time.perf_counter()
    for batch in hugging_face_batches(train_features, args.batch_size, args.seed, args.epochs):
        hugging_face_step(model, batch, optimizer, schedule)
    seconds = time.perf_counter() - started
    scores = hugging_face_scores(task, model, tokenizer, evaluation, label_names, args.seq_length)
    return {"train_seconds": round(seconds, 1), "evaluation": scores}


RUNNERS = {"keras_bert": run_keras_bert, "hugging_face": run_hugging_face}


def run_in_subprocess(side: str, task: str, seed: int, args: argparse.Namespace) -> dict:
    """One run in a fresh process (no shared thread pools or caches), as JSON."""
    command = [
        sys.executable,
        "-m",
        "bench.bench_peer_finetuning",
        "--one-run",
        side,
        "--tasks",
        task,
        "--seeds",
        str(seed),
        "--epochs",
        str(args.epochs),
        "--seq-length",
        str(args.seq_length),
        "--batch-size",
        str(args.batch_size),
    ]
    if args.max_train_examples:
        command += ["--max-train-examples", str(args.max_train_examples)]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def score_of(task: str, evaluation: dict) -> float:
    return evaluation["f1"] if task == "wnut16" else evaluation["accuracy"]


def print_table(results: list[dict], args: argparse.Namespace) -> None:
    print(
        f"\nbudget: {args.epochs} epochs, seq {args.seq_length}, batch {args.batch_size}, "
        f"train examples {args.max_train_examples or 'all'}"
    )
    print(
        "| task | side | metric | per seed | mean | train s | sequences/s "
        "| CPU s of the whole run |"
    )
    print("|---|---|---|---|---:|---:|---:|---:|")
    for task in args.tasks:
        for side in args.sides:
            runs = [r for r in results if r["task"] == task and r["side"] == side]
            if not runs:
                continue
            scores = [score_of(task, r["evaluation"]) for r in runs]
            per_seed = ", ".join(f"{r['seed']}: {s:.4f}" for r, s in zip(runs, scores, strict=True))
            metric = "entity F1" if task == "wnut16" else "accuracy"
            seconds = statistics.mean(r["train_seconds"] for r in runs)
            throughput = statistics.mean(r["sequences_per_second"] for r in runs)
            cpu_seconds = statistics.mean(r["run_cpu_seconds"] for r in runs)
            print(
                f"| {task} | {side} | {metric} | {per_seed} | {statistics.mean(scores):.4f} "
                f"| {seconds:.0f} | {throughput:.1f} | {cpu_seconds:.0f} |"
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="wnut16,sentiment")
    parser.add_argument("--sides", default=",".join(SIDES))
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--seq-length", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-train-examples", type=int)
    parser.add_argument("--one-run", choices=SIDES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.tasks, args.sides = args.tasks.split(","), args.sides.split(",")
    seeds = [int(seed) for seed in args.seeds.split(",")]
    if args.one_run:
        args.seed = seeds[0]
        started = time.process_time()
        result = RUNNERS[args.one_run](args.tasks[0], args)
        # CPU time is what other jobs sharing the cores disturb least.
        result["run_cpu_seconds"] = round(time.process_time() - started, 1)
        print(json.dumps(result))
        return
    results = []
    for task in args.tasks:
        train, _, _ = read_task(task)
        sequences = args.epochs * min(len(train), args.max_train_examples or len(train))
        for seed in seeds:
            for side in args.sides:
                result = run_in_subprocess(side, task, seed, args)
                result.update(
                    task=task,
                    side=side,
                    seed=seed,
                    sequences_per_second=sequences / result["train_seconds"],
                )
                print(json.dumps(result), flush=True)
                results.append(result)
    print_table(results, args)


if __name__ == "__main__":
    main()
