"""Work-arounds for Keras 3.15 bugs met by distributed training, each applied where needed."""

from __future__ import annotations

import types

import keras
import tensorflow as tf


def reduce_symbolic_build_batch_per_tensor(model: keras.Model) -> None:
    """Lets `model.fit` start under `MultiWorkerMirroredStrategy` with dict inputs.

    Before its first step, Keras 3.15's TensorFlow trainer (`_maybe_symbolic_build`) averages
    the first distributed batch over replicas with one `strategy.reduce` call on the whole
    nested batch; the collective reduce of `MultiWorkerMirroredStrategy` accepts one tensor at a
    time and fails with "Attempt to convert a value ({'input_word_ids': PerReplica...}) ...
    to a Tensor". This reduces tensor by tensor instead; the batch is only used for shapes.
    """
    original = model._maybe_symbolic_build

    def maybe_symbolic_build(self, iterator=None, data_batch=None):
        if iterator is None or self._distribute_strategy is None:
            return original(iterator=iterator, data_batch=data_batch)
        for _, _, batches in iterator:
            batch = next(batches)
            break

        def reduce(value):
            if isinstance(value, tf.distribute.DistributedValues):
                return self.distribute_strategy.reduce("MEAN", value, axis=None)
            return value

        return original(data_batch=keras.tree.map_structure(reduce, batch))

    model._maybe_symbolic_build = types.MethodType(maybe_symbolic_build, model)


def reduce_scalar_logs_across_workers() -> None:
    """Lets `model.fit` report metrics under `MultiWorkerMirroredStrategy` (tensorflow#72388).

    Keras 3.15 averages each train step's logs over workers with
    `strategy.reduce("MEAN", value, axis=0)`; the logs are scalars, which have no axis 0
    ("Invalid reduction dimension 0 for input with 0 dimensions"). Scalars are averaged with
    `axis=None` (over replicas only) instead. Process-wide and idempotent.
    """
    from keras.src.backend.tensorflow import trainer as tensorflow_trainer

    original = tensorflow_trainer.reduce_per_replica
    if getattr(original, "_keras_bert_scalar_logs", False):
        return

    def reduce_per_replica(values, strategy, reduction):
        multi_worker = tensorflow_trainer._collective_all_reduce_multi_worker(strategy)
        if multi_worker and reduction in ("auto", "mean"):

            def reduce(value):
                if isinstance(value, tf.Tensor | tf.distribute.DistributedValues) and (
                    value.shape.rank == 0
                ):
                    return strategy.reduce("MEAN", value, axis=None)
                return original(value, strategy, reduction)

            return keras.tree.map_structure(reduce, values)
        return original(values, strategy, reduction)

    reduce_per_replica._keras_bert_scalar_logs = True
    tensorflow_trainer.reduce_per_replica = reduce_per_replica


def enable_multi_worker_fit(model: keras.Model) -> None:
    """Both work-arounds `model.fit` needs under `MultiWorkerMirroredStrategy` in Keras 3.15."""
    reduce_symbolic_build_batch_per_tensor(model)
    reduce_scalar_logs_across_workers()
