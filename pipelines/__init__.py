"""Command-line jobs over keras_bert (`python -m pipelines.<job> --help`).

Every job imports this package first, so TensorFlow is imported here: with its oneDNN kernels
on where TensorFlow would leave them off although they are faster (`pipelines.common.
turn_onednn_on_where_faster`), and quietly unless the command line says `--verbose`
(`pipelines.common.quiet_tensorflow`).
"""

import sys

from pipelines.common import quiet_tensorflow, turn_onednn_on_where_faster

turn_onednn_on_where_faster()
quiet_tensorflow(sys.argv[1:])
