"""Backups at epoch ends: every epoch, or once an interval has passed, and always at the end."""

import json

import keras
import numpy as np
import pytest

from keras_bert.training import AtomicBackupAndRestore, completed_epochs


class BackedUpEpochs(keras.callbacks.Callback):
    """The epoch the backup on disk holds, read after each epoch's backup callbacks ran."""

    def __init__(self, backup_dir):
        super().__init__()
        self.backup_dir = backup_dir
        self.seen = []

    def on_epoch_end(self, epoch, logs=None):
        self.seen.append(completed_epochs(self.backup_dir))


def fit_epochs(backup_dir, epochs: int, min_interval_seconds: float) -> list[int]:
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    seen = BackedUpEpochs(backup_dir)
    backup = AtomicBackupAndRestore(
        str(backup_dir), min_interval_seconds=min_interval_seconds, delete_checkpoint=False
    )
    data = (np.ones((8, 3), "float32"), np.zeros((8, 1), "float32"))
    model.fit(*data, epochs=epochs, batch_size=4, callbacks=[backup, seen], verbose=0)
    return seen.seen


@pytest.mark.parametrize(
    ("min_interval_seconds", "backed_up_at_epoch_ends"), [(0.0, [1, 2, 3]), (3600.0, [0, 0, 0])]
)
def test_backups_wait_for_the_interval_and_the_end_is_always_backed_up(
    tmp_path, min_interval_seconds, backed_up_at_epoch_ends
):
    backup_dir = tmp_path / "backup"
    seen = fit_epochs(backup_dir, 3, min_interval_seconds)
    assert seen == backed_up_at_epoch_ends
    # `fit` returned: its last epoch is backed up either way, whole.
    assert json.loads((backup_dir / "training_metadata.json").read_text()) == {
        "epoch": 3,
        "batch": 0,
    }
    assert sorted(path.name for path in backup_dir.iterdir()) == [
        "latest.weights.h5",
        "training_metadata.json",
    ]
    # A finished run restarted trains nothing more and leaves its backup as it was.
    assert fit_epochs(backup_dir, 3, min_interval_seconds) == []
    assert completed_epochs(backup_dir) == 3
