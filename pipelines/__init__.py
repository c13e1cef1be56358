"""Command-line jobs over keras_bert (`python -m pipelines.<job> --help`).

Every job imports this package first, so TensorFlow is imported here, quietly unless the
command line says `--verbose` (`pipelines.common.quiet_tensorflow`).
"""

import sys

from pipelines.common import quiet_tensorflow

quiet_tensorflow(sys.argv[1:])
