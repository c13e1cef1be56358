"""accuracy_at_mask is what copying the input cannot reach."""

import keras

from keras_bert.data import read_text_documents, tokenize_documents
from keras_bert.metrics.masked_lm import evaluate_masked_lm, masked_lm_evaluation_dataset
from keras_bert.text import WordPieceTokenizer, load_vocabulary


class CopyInput(keras.Model):
    """Predicts, at each masked position, the token the input shows there."""

    def __init__(self, vocab_size: int):
        super().__init__()
        self.vocab_size = vocab_size

    def call(self, inputs):
        shown = keras.ops.take_along_axis(
            inputs["input_word_ids"], inputs["masked_lm_positions"], axis=1
        )
        return {"masked_lm": 10.0 * keras.ops.one_hot(shown, self.vocab_size)}


def test_copying_scores_only_the_unchanged_positions(data_dir, minilm_dir):
    vocabulary = load_vocabulary(minilm_dir / "vocab.txt")
    tokenizer = WordPieceTokenizer(str(minilm_dir / "vocab.txt"))
    documents = read_text_documents(data_dir / "pretraining" / "austen_novels.txt")[:4]
    dataset = masked_lm_evaluation_dataset(
        tokenize_documents(documents, tokenizer), vocabulary, seq_length=128, seed=3
    )
    scores = evaluate_masked_lm(CopyInput(len(vocabulary)), dataset, vocabulary)
    weights = sum(float(batch["masked_lm_weights"].numpy().sum()) for batch in dataset)
    assert scores["predictions"] == weights > 1000
    assert scores["accuracy_at_mask"] == 0.0
    # 10% of the positions keep their token (and a random replacement is rarely the same).
    assert 0.08 < scores["accuracy"] < 0.12
    # Same seed, same batches, same scores.
    assert evaluate_masked_lm(CopyInput(len(vocabulary)), dataset, vocabulary) == scores
