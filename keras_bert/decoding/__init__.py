"""Task outputs decoded into answers: entities from BIO tags, answer spans from start and end
logits, mask fillers from masked-LM logits, and the length bucket a batch is computed on.

The task models' `predict_entities`, `answer` and `fill_mask` and the export's serving
signatures decode with the same functions, in TensorFlow ops from text to answer; evaluation
decodes in Python (`bio_spans`, `decode_answers`).
"""
