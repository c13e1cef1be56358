"""Checks that the `tokenizer.json` of an ONNX export gives keras_bert's ids on every text of
shared/data, for BERT (MiniLM's WordPiece), RoBERTa, DistilBERT, ALBERT and DeBERTa-v3 (the
small checkpoints of shared/reference/variants). Prints, per family, the texts compared and how
many got identical ids (the first that did not, if any), and the seconds each side took.

    .venv/bin/python -m bench.onnx_tokenizer_agreement [--families bert roberta ...] [--limit N]
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = REPO_ROOT.parent / "shared" / "data"
VARIANTS_DIR = REPO_ROOT.parent / "shared" / "reference" / "variants"
FAMILIES = ("bert", "roberta", "distilbert", "albert", "deberta_v3", "xlm_roberta")


def _squad_texts(path: Path) -> list[str]:
    texts = []
    for article in json.loads(path.read_text(encoding="utf-8"))["data"]:
        for paragraph in article["paragraphs"]:
            texts.append(paragraph["context"])
            texts += [question["question"] for question in paragraph["qas"]]
    return texts


def _conll_sentences(path: Path) -> list[str]:
    sentences, words = [], []
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        if not line.strip() or line.startswith("-DOCSTART-"):
            if words:
                sentences.append(" ".join(words))
            words = []
        else:
            words.append(line.split()[0])
    return sentences


def _tsv_texts(path: Path) -> list[str]:
    """Every field of a GLUE file that is not a number or a label (its sentences)."""
    texts = []
    with open(path, encoding="utf-8-sig", newline="") as file:
        for row in csv.reader(file, delimiter="\t", quoting=csv.QUOTE_NONE):
            texts += [field for field in row if len(field.split()) > 2]
    return texts


def shared_texts(data_dir: Path = DATA_DIR) -> list[str]:
    """Every text of shared/data: sentences, tweets (tokens joined by spaces), pretraining
    lines, SQuAD contexts and questions, GLUE sentences, CoNLL-2003 sentences."""
    texts = []
    for path in sorted((data_dir / "sentiment").glob("*.jsonl")):
        texts += [json.loads(line)["text"] for line in path.read_text().splitlines() if line]
    for path in sorted((data_dir / "ner").glob("*.jsonl")):
        texts += [
            " ".join(json.loads(line)["tokens"]) for line in path.read_text().splitlines() if line
        ]
    for path in sorted((data_dir / "pretraining").glob("*.txt")):
        texts += [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts += _squad_texts(data_dir / "qa" / "squad_v1_sample.json")
    benchmarks = data_dir / "benchmarks"
    for path in sorted(benchmarks.glob("glue/*/*.tsv")):
        texts += _tsv_texts(path)
    for path in sorted(benchmarks.glob("conll2003/eng.*")):
        texts += _conll_sentences(path)
    for path in sorted(benchmarks.glob("squad/*.json")):
        texts += _squad_texts(path)
    return texts


def family_preprocessor(family: str, seq_length: int = 128):
    import keras_bert
    from pipelines.common import default_checkpoint

    checkpoint = default_checkpoint() if family == "bert" else VARIANTS_DIR / family
    preprocessor = keras_bert.load_preprocessor(checkpoint)
    # Packed past the small checkpoints' 64 positions: the tokenizer is what is compared.
    return type(preprocessor).from_config({**preprocessor.get_config(), "seq_length": seq_length})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument("--limit", type=int, help="only the first N texts (a quick check)")
    args = parser.parse_args()

    from keras_bert.export.onnx.tokenizer_json import hf_tokenizer, tokenizer_agreement

    texts = shared_texts()[: args.limit]
    print(f"{len(texts)} texts of shared/data")
    for family in args.families:
        preprocessor = family_preprocessor(family)
        start = time.perf_counter()
        agreement = tokenizer_agreement(hf_tokenizer(preprocessor), preprocessor, texts)
        print(
            f"{family}: {agreement.identical} of {agreement.texts} texts identical "
            f"({time.perf_counter() - start:.0f} s)"
            + (
                f"; first difference: {agreement.first_difference!r}"
                if agreement.first_difference
                else ""
            )
        )


if __name__ == "__main__":
    main()
