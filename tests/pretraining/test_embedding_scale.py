"""A pretraining run from scratch writes its embedding tables at the initializer's scale
(`rescaled_embedding_tables`), and nothing its checkpoint computes changes: the encoder's
outputs and the masked-LM logits through the decoder tied to the token table."""

import numpy as np
import pytest

import keras_bert
from keras_bert.config import BertConfig
from keras_bert.models.pretrainer import BertPretrainer
from keras_bert.pretraining import save_pretrainer_checkpoint
from keras_bert.pretraining.embedding_scale import rescaled_embedding_tables

BATCH = {
    "input_word_ids": np.array([[2, 17, 45, 9, 3, 0]], "int32"),
    "input_mask": np.array([[1, 1, 1, 1, 1, 0]], "int32"),
    "input_type_ids": np.array([[0, 0, 0, 1, 1, 0]], "int32"),
    "masked_lm_positions": np.array([[1, 2, 4]], "int32"),
}


@pytest.mark.parametrize("model_type, embedding_size", [("bert", None), ("albert", 16)])
def test_grown_tables_are_written_at_the_initializers_scale_with_the_same_outputs(
    model_type, embedding_size, tmp_path
):
    config = BertConfig.preset("tiny", vocab_size=60, model_type=model_type)
    config = config.replace(embedding_size=embedding_size, pooler=True)
    model = BertPretrainer(config)
    # Tables grown as Adam grows them in pretraining: five times the initializer's scale.
    embeddings = model.encoder.embeddings
    tables = (
        embeddings.token_embedding,
        embeddings.segment_embedding,
        embeddings.position_embedding,
    )
    for layer in tables:
        layer.embeddings.assign(5.0 * layer.embeddings.numpy())
    save_pretrainer_checkpoint(model, tmp_path, vocabulary_file=None, table_rms=0.02)

    masked_lm = keras_bert.load_masked_lm(tmp_path)
    table = masked_lm.encoder.embeddings.token_embedding.embeddings.numpy()
    assert np.sqrt(np.mean(table**2)) == pytest.approx(0.02, rel=1e-4)
    np.testing.assert_allclose(
        masked_lm(BATCH)["masked_lm"], model(BATCH)["masked_lm"], rtol=1e-4, atol=1e-4
    )
    inputs = {name: BATCH[name] for name in ("input_word_ids", "input_mask", "input_type_ids")}
    np.testing.assert_allclose(
        masked_lm.encoder(inputs)["sequence_output"],
        model.encoder(inputs)["sequence_output"],
        atol=1e-4,
    )


def test_a_checkpoint_without_a_layer_norm_after_its_tables_is_left_as_it_is():
    tensors = {"bert/embeddings/word_embeddings": np.full((4, 2), 0.5, "float32")}
    assert rescaled_embedding_tables(tensors, 0.02) == (tensors, 1.0)
    with pytest.raises(ValueError, match="positive"):
        rescaled_embedding_tables(tensors, 0.0)
