"""``python -m producer``: the command line (:mod:`producer.cli`)."""

import sys

from producer.cli import main

if __name__ == "__main__":
    sys.exit(main())
