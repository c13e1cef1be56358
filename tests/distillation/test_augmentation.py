"""Augmented unlabeled text: masked words and n-grams of the real training texts."""

import json

from keras_bert.distillation.augmentation import augment_texts


def test_variants_mask_words_and_sample_ngrams_of_real_texts(data_dir):
    path = data_dir / "sentiment" / "movie_snippets.train.jsonl"
    texts = [json.loads(line)["text"] for line in path.read_text().splitlines()[:200]]
    variants = augment_texts(texts, copies=3, seed=0)
    assert augment_texts(texts, copies=3, seed=0) == variants  # deterministic under the seed
    assert 300 < len(variants) < 600 and not set(variants) & {" ".join(t.split()) for t in texts}
    masked = [variant.split().count("[MASK]") for variant in variants]
    words = sum(len(variant.split()) for variant in variants)
    assert 0.07 < sum(masked) / words < 0.13  # mask_probability 0.1
    longest = max(len(text.split()) for text in texts)
    short = [variant for variant in variants if len(variant.split()) <= 5]
    assert 0.15 < len(short) / len(variants) < 0.4 and longest > 5  # n-grams of <= 5 words


def test_every_word_masked_and_no_ngrams():
    assert augment_texts(["so very dull", " "], copies=2, mask_probability=1.0,
                         ngram_probability=0.0) == ["[MASK] [MASK] [MASK]"] * 2  # fmt: skip
    assert augment_texts(["so very dull"], copies=2, mask_probability=0, ngram_probability=0) == []
