"""``python -m producer.testing``: the same as ``python -m producer cluster``."""

import sys

from producer.testing._cli import run_cluster_cli

if __name__ == "__main__":
    sys.exit(run_cluster_cli())
