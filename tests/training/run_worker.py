"""A pretraining process for the training tests: `python -m tests.training.run_worker SPEC`.

SPEC is a JSON file with `config` (PretrainingConfig fields), optional `logical_cpus` (split
the CPU into that many logical devices before TensorFlow starts), optional `tf_config` (set as
TF_CONFIG), `weights_out` (an .npz of the final weights and optimizer step) and optional
`values` (their `mean_over_workers` after training goes into the .npz as `means`).
"""

import json
import os
import sys


def main(spec_path: str) -> None:
    import keras

    keras.config.disable_traceback_filtering()
    with open(spec_path, encoding="utf-8") as file:
        spec = json.load(file)
    if "tf_config" in spec:
        os.environ["TF_CONFIG"] = json.dumps(spec["tf_config"])
    import tensorflow as tf

    if spec.get("logical_cpus"):
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * spec["logical_cpus"]
        )
    import numpy as np

    from keras_bert.pretraining import PretrainingConfig, run_pretraining
    from keras_bert.training.strategy import mean_over_workers

    history = run_pretraining(PretrainingConfig(**spec["config"]))
    model = history.model
    np.savez(
        spec["weights_out"],
        means=mean_over_workers(model.distribute_strategy, spec.get("values", [])),
        iterations=int(model.optimizer.iterations.numpy()),
        replicas=model.distribute_strategy.num_replicas_in_sync,
        jit_compile=bool(model.jit_compile),
        **{f"weight_{index}": np.asarray(w) for index, w in enumerate(model.weights)},
    )


if __name__ == "__main__":
    main(sys.argv[1])
