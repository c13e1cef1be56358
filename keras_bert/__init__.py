"""keras_bert: BERT for TensorFlow and Keras 3 — pretrain, fine-tune, serve with TF Serving."""
